// Which two traces of the server's list can be compared: the same model file content (sha256)
// and the same prompt (the recorder's diff refuses anything else). Picks the landing page's
// default pair and says why a pair is refused.
export interface ListedTrace {
  name: string; model?: string; model_sha256?: string; prompt?: string; matmul_path?: string; error?: string;
}

const FLOAT = new Set(['f16', 'f32']);

// Null when a and b can be compared, else the reason.
export function pairProblem(a: ListedTrace, b: ListedTrace): string | null {
  if (a.model_sha256 && b.model_sha256) {
    if (a.model_sha256 !== b.model_sha256)
      return `different models: ${a.model || '?'} (sha256 ${a.model_sha256.slice(0, 8)}…) vs ${b.model || '?'} (sha256 ${b.model_sha256.slice(0, 8)}…)`;
  } else if ((a.model ?? '') !== (b.model ?? '')) {
    return `different model files: ${a.model || '?'} vs ${b.model || '?'}`;
  }
  if ((a.prompt ?? '') !== (b.prompt ?? '')) return `different prompts: “${short(a.prompt)}” vs “${short(b.prompt)}”`;
  return null;
}

// The default pair: an int8 path as A against a float path as B, else two different paths,
// else any comparable pair. Null when no two traces can be compared.
export function defaultPair(list: ListedTrace[]): [number, number] | null {
  let best: [number, number] | null = null, bestScore = -1;
  for (let i = 0; i < list.length; i++)
    for (let j = 0; j < list.length; j++) {
      if (i === j || pairProblem(list[i], list[j])) continue;
      const pa = list[i].matmul_path ?? '', pb = list[j].matmul_path ?? '';
      const score = !FLOAT.has(pa) && FLOAT.has(pb) ? 2 : pa !== pb ? 1 : 0;
      if (score > bestScore) { best = [i, j]; bestScore = score; }
    }
  return best;
}

// Why no pair exists: the traces grouped by model, and what differs within each model.
export function noPairReason(list: ListedTrace[]): string {
  if (list.length < 2) return 'Comparing needs two traces of the same model and prompt; the server lists fewer than two readable traces.';
  const byModel = new Map<string, ListedTrace[]>();
  for (const t of list) {
    const k = t.model_sha256 || t.model || '?';
    byModel.set(k, [...(byModel.get(k) ?? []), t]);
  }
  const same = [...byModel.values()].filter((g) => g.length >= 2);
  if (same.length === 0) return `No two traces share a model: each of the ${list.length} traces is of a different model (or model file content).`;
  return `No two traces share both model and prompt: ${same.map((g) => `${g[0].model || '?'}: ${g.length} traces with ${new Set(g.map((t) => t.prompt)).size} different prompts`).join('; ')}.`;
}

function short(s: string | undefined): string {
  const t = (s ?? '').replace(/\s+/g, ' ').trim();
  return t.length > 40 ? `${t.slice(0, 39)}…` : t;
}
