// The trace schema, the JSON types generated from it and the page's model stay one contract
// (issue 28, item 1). web/src/model/trace-json.ts is generated from the schema
// (scripts/gen-trace-types.mjs); web/src/model/trace-fields.ts says where the model (types.ts)
// keeps each field, and `npm run typecheck:web` checks it against both types. Here: the generated
// file is what the schema gives today, and the map has every object of the schema with exactly
// its fields, so a field added to (or dropped from) the schema fails until the page says what it
// does with it.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { TRACE_FIELDS } from '../src/model/trace-fields';

const root = fileURLToPath(new URL('../..', import.meta.url));
const schema = JSON.parse(readFileSync(`${root}/traces/schema/minfer-trace-v3.schema.json`, 'utf8'));

type Schema = { properties?: Record<string, Schema>; items?: Schema; anyOf?: Schema[]; oneOf?: Schema[]; additionalProperties?: unknown };

// Every object schema with named properties, by the path trace-fields.ts uses: "#" the root, a
// $defs name, then ".field" into inline objects and "[]" into inline array items.
function objectSchemas(): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const walk = (s: Schema | undefined, path: string) => {
    if (!s || typeof s !== 'object') return;
    if (s.properties) {
      out.set(path, Object.keys(s.properties));
      for (const [k, v] of Object.entries(s.properties)) walk(v, `${path}.${k}`);
    }
    if (s.items) walk(s.items, `${path}[]`);
    for (const alt of [...(s.anyOf ?? []), ...(s.oneOf ?? [])]) walk(alt, path);
    if (s.additionalProperties && typeof s.additionalProperties === 'object') walk(s.additionalProperties as Schema, `${path}{}`);
  };
  const { $defs, ...top } = schema as { $defs: Record<string, Schema> } & Schema;
  walk(top, '#');
  for (const [name, s] of Object.entries($defs)) walk(s, name);
  return out;
}

describe('trace schema ↔ page model', () => {
  it('web/src/model/trace-json.ts is generated from the schema as it is now', () => {
    // Exits 1 naming the file when it differs from what the generator writes.
    execFileSync(process.execPath, [`${root}/scripts/gen-trace-types.mjs`, '--check'], { stdio: 'pipe' });
  });

  const objects = objectSchemas();
  const map = TRACE_FIELDS as Record<string, Record<string, string>>;

  it('every object of the schema is in trace-fields.ts, and nothing else is', () => {
    expect([...objects.keys()].filter((p) => !(p in map)), 'schema objects the page does not map').toEqual([]);
    expect(Object.keys(map).filter((p) => !objects.has(p)), 'mapped objects the schema does not define').toEqual([]);
  });

  for (const [path, fields] of objects) {
    it(`${path}: each field is read into the model or says why not`, () => {
      const mapped = map[path] ?? {};
      expect(fields.filter((f) => !(f in mapped)), `fields of ${path} the page does not map`).toEqual([]);
      expect(Object.keys(mapped).filter((f) => !fields.includes(f)), `mapped fields ${path} does not have`).toEqual([]);
    });
  }
});
