# The direct matvec's phase records (engine/cuda/matvec_phases.cuh; scripts/device/matvec_phases.sh)
# as per-matrix medians over the decode steps: records sorted by the time each CTA passed the PDL
# wait are cut into launches where the weight pointer changes; the first third (warm-up, graph
# capture) is skipped. Columns, in us: how long before the first CTA passed the wait the first one
# started and how far the passes spread; per CTA the time to the wait, the prologue, the steps
# (median and max); the first, median and last CTA end after the first pass; the gap from the
# previous matvec's last end to this one's first pass. A kind: (groups, f32 input with prologue).
#   python3 phases_report.py phases.csv
import csv, sys, statistics as st
rows = []
with open(sys.argv[1]) as f:
    r = csv.reader(f); next(r)
    for x in r:
        rows.append((int(x[0]), int(x[1]), int(x[2]), int(x[3]), int(x[4]), int(x[5]), int(x[6]), int(x[7]), x[8], int(x[9]), int(x[10]), int(x[11]), int(x[12]), int(x[13])))
rows.sort(key=lambda t: t[1])
launches, cur, key = [], [], None
for t in rows:
    k = (t[8], t[12])
    if k != key and cur:
        launches.append(cur); cur = []
    key = k; cur.append(t)
if cur: launches.append(cur)
print("records", len(rows), "launches", len(launches))
# clock rate from long CTAs
ratios = [(t[7]-t[4])/(t[3]-t[0]) for t in rows[::97] if t[3]-t[0] > 2000]
ghz = st.median(ratios) if ratios else 1.98
print("clock64 per ns ~", round(ghz, 3))
kinds = {}
prev_end = None
skip = len(launches) // 3  # warm-up and capture steps
for i, L in enumerate(launches):
    g0 = [t[0] for t in L]; g1 = [t[1] for t in L]; g3 = [t[3] for t in L]
    pro = [(t[6]-t[5])/ghz for t in L]; comp = [(t[7]-t[6])/ghz for t in L]; pre = [(t[5]-t[4])/ghz for t in L]
    rel = min(g1)
    d = dict(n=len(L), grid=L[0][13], start_before_release=(rel-min(g0))/1e3, release_spread=(max(g1)-rel)/1e3,
             wait_med=st.median(pre)/1e3, prologue_med=st.median(pro)/1e3, compute_med=st.median(comp)/1e3,
             compute_max=max(comp)/1e3, end_first=(min(g3)-rel)/1e3, end_med=(st.median(g3)-rel)/1e3, end_last=(max(g3)-rel)/1e3,
             gap_prev=(rel-prev_end)/1e3 if prev_end else float('nan'))
    prev_end = max(g3)
    if i < skip: continue
    kinds.setdefault((L[0][9], L[0][12]), []).append(d)
print("kind(n_groups,quantize) count | n/grid | release: start_before spread | per CTA: wait prologue compute compute_max | ends after release: first med last | gap from prev matvec end (us)")
for k, ds in sorted(kinds.items()):
    m = lambda f: st.median([d[f] for d in ds])
    print(f"{k} {len(ds):5d} | {m('n'):.0f}/{m('grid'):.0f} | {m('start_before_release'):6.2f} {m('release_spread'):5.2f} | {m('wait_med'):6.2f} {m('prologue_med'):5.2f} {m('compute_med'):6.2f} {m('compute_max'):6.2f} | {m('end_first'):6.2f} {m('end_med'):6.2f} {m('end_last'):6.2f} | {m('gap_prev'):6.2f}")
