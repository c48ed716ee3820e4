// minfer-viz: serves the web app and the traces over a JSON API (see viz_server.h).
#include <csignal>
#include <cstdio>
#include <iostream>
#include <pthread.h>
#include <thread>

#include "core/engine_options.h"
#include "core/environment.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "sha256.h"
#include "viz_args.h"
#include "viz_server.h"

int main(int argc, char** argv) {
  using namespace minfer::viz;
  VizArgs args;
  minfer::EngineOptions engine;
  std::string digest_cache;
  try {
    const minfer::Environment env = minfer::process_environment();  // the one read of it
    args = parse_viz_args(std::vector<std::string>(argv + 1, argv + argc), env);
    if (!args.help) engine = minfer::EngineOptions::from_env(env);
    digest_cache = minfer::trace::digest_cache_dir(env);
  } catch (const minfer::Error& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
  if (args.help) {
    std::cout << viz_usage();
    return 0;
  }

  // SIGINT/SIGTERM are taken by a waiting thread (not a handler) so that shutdown runs
  // ordinary code: stop the server, let in-flight requests finish.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  try {
    VizConfig config;
    config.host = args.host;
    config.port = args.port;
    config.traces_dirs = args.traces_dirs;
    config.web_dir = args.web_dir;
    config.models = args.models;
    config.max_trace_bytes = args.max_trace_bytes;
    config.max_steps = args.max_steps;
    config.engine = engine;
    config.digest_cache_dir = digest_cache;
    minfer::ThreadPool::set_global_threads(engine.threads);  // the live runs' cpu backend
    VizServer server(config);
    server.bind();
    std::thread waiter([&] {
      int sig = 0;
      sigwait(&stop_signals, &sig);
      server.stop();
    });
    waiter.detach();
    for (const auto& d : server.context().traces.dirs())
      std::cout << "minfer-viz: traces from " << d.string() << "\n";
    if (server.context().web_root)
      std::cout << "minfer-viz: web app from " << server.context().web_root->string() << "\n";
    else
      std::cout << "minfer-viz: no web app (--web DIR); API only\n";
    std::cout << "minfer-viz: serving " << server.url() << std::endl;
    server.run();
  } catch (const minfer::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
