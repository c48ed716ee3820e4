// The path gate on its own: names, raw targets, decoded paths and symlinks.
#include <gtest/gtest.h>

#include "path_safety.h"
#include "viz_test_support.h"

namespace minfer::viz::test {
namespace {

TEST(PathSafety, PlainFileNames) {
  EXPECT_TRUE(is_plain_file_name("tiny-mmq.json"));
  EXPECT_TRUE(is_plain_file_name("a b.json.gz"));
  for (const std::string& bad : std::vector<std::string>{"", ".", "..", "../x.json", "a/b.json", "a\\b.json", "/etc/passwd",
                          std::string("a\0b.json", 8), "a\nb.json", "a\x7f.json"})
    EXPECT_FALSE(is_plain_file_name(bad)) << bad;
}

TEST(PathSafety, RawTargetsWithEncodedSeparators) {
  for (const std::string& bad : std::vector<std::string>{"/api/traces/%2e%2e%2fsecret.json", "/%2E%2E/etc/passwd",
                          "/api/traces/..%2Fx.json", "/a%5cb", "/x.json%00.png", "/%2e"})
    EXPECT_TRUE(raw_target_is_suspicious(bad)) << bad;
  EXPECT_FALSE(raw_target_is_suspicious("/api/traces/my%20trace.json"));
  EXPECT_FALSE(raw_target_is_suspicious("/api/compare?a=x%2fy&b=z"));  // query: checked by name
}

TEST(PathSafety, DecodedPaths) {
  for (const std::string& bad : std::vector<std::string>{"", "relative", "/../etc/passwd", "/a/../../b", "/a/./b", "//etc/passwd",
                          "/a//b", "/a\\..\\b", std::string("/a\0b", 4), "/..", "/a/.."})
    EXPECT_TRUE(url_path_is_suspicious(bad)) << bad;
  for (const std::string& ok : std::vector<std::string>{"/", "/index.html", "/assets/app-1234.js", "/compare/", "/a.b/c"})
    EXPECT_FALSE(url_path_is_suspicious(ok)) << ok;
}

TEST(PathSafety, ResolveInsideRefusesEscapesAndSymlinksOut) {
  TempDir root("ps-root"), outside("ps-out");
  write_file(root.path() / "index.html", "<html></html>");
  write_file(root.path() / "assets" / "app.js", "console.log(1)");
  write_file(outside.path() / "secret.txt", "secret");
  fs::create_symlink(outside.path() / "secret.txt", root.path() / "leak.txt");
  fs::create_symlink(outside.path(), root.path() / "leakdir");
  fs::create_symlink(root.path() / "assets" / "app.js", root.path() / "alias.js");

  EXPECT_EQ(resolve_inside(root.path(), "index.html"), root.path() / "index.html");
  EXPECT_EQ(resolve_inside(root.path(), "assets/app.js"), root.path() / "assets" / "app.js");
  EXPECT_EQ(resolve_inside(root.path(), "alias.js"), root.path() / "assets" / "app.js");
  EXPECT_FALSE(resolve_inside(root.path(), "leak.txt"));
  EXPECT_FALSE(resolve_inside(root.path(), "leakdir/secret.txt"));
  EXPECT_FALSE(resolve_inside(root.path(), "../" + outside.path().filename().string() + "/secret.txt"));
  EXPECT_FALSE(resolve_inside(root.path(), outside.path().string() + "/secret.txt"));
  EXPECT_FALSE(resolve_inside(root.path(), "assets"));  // a directory, not a file
  EXPECT_FALSE(resolve_inside(root.path(), "missing.html"));
  EXPECT_FALSE(resolve_inside(root.path(), std::string("index.html\0.png", 15)));
}

TEST(PathSafety, IsWithinComparesWholeComponents) {
  EXPECT_TRUE(is_within("/srv/web", "/srv/web/a.js"));
  EXPECT_TRUE(is_within("/srv/web", "/srv/web"));
  EXPECT_FALSE(is_within("/srv/web", "/srv/webx/a.js"));
  EXPECT_FALSE(is_within("/srv/web", "/srv"));
}

}  // namespace
}  // namespace minfer::viz::test
