// A trace that cannot be read: the message names the source, the JSON path and the problem,
// and is what the page shows.
export class TraceError extends Error {
  constructor(source: string, path: string, problem: string) {
    super(`${source}: ${path ? path + ': ' : ''}${problem}`);
    this.name = 'TraceError';
  }
}
