// Entry point of the trace model: text or parsed JSON of any version (1, 2, 3) → Trace.
import { Checker } from './checked';
import { TraceError } from './errors';
import { parseV1 } from './parse-v1';
import { parseV2 } from './parse-v2';
import type { Trace } from './types';

export function parseTraceText(text: string, source: string): Trace {
  if (text.trim() === '') throw new TraceError(source, '', 'the file is empty');
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new TraceError(source, '', `not valid JSON (${(e as Error).message}); is the file truncated?`);
  }
  return parseTrace(json, source);
}

export function parseTrace(json: unknown, source: string): Trace {
  const c = new Checker(source);
  const root = c.obj(json, '(top level)');
  if (typeof root.error === 'string' && root.format === undefined)
    c.fail('', `the server answered with an error: ${root.error}`);
  if (root.format !== 'minfer-trace')
    c.fail('format', `expected "minfer-trace", got ${JSON.stringify(root.format) ?? 'nothing'}: not a minfer trace`);
  if (root.version === 2 || root.version === 3) return parseV2(c, root, source, root.version);
  if (root.version === 1) return parseV1(c, root, source);
  return c.fail('version', `unsupported version ${JSON.stringify(root.version)} (this page reads 1, 2 and 3)`);
}
