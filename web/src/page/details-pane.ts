// The pane right of the graph: the selected node in the inspector (A beside B in a comparison),
// or the selected pipeline stage's details. After a step change it is drawn a frame later, and
// the bottom tab a frame after that, so no frame does all the work (a held arrow key stays smooth).
import { selectNode } from '../state/navigation';
import { graphOf, type SelectionStore } from '../state/selection';
import { Inspector } from '../views/inspector';
import { stageDetails, type PipelineView } from '../views/pipeline-view';

export class DetailsPane {
  readonly inspector: Inspector;
  private frame = 0;
  lastMs = 0;   // the deferred work of the last step change (page-speed benchmark)

  // `goToNode`: select and centre a node; `back`: the inspector's back button.
  constructor(private store: SelectionStore, private pipeline: PipelineView, private goToNode: (id: number) => void, back: () => void) {
    this.inspector = new Inspector((id) => selectNode(store, id), back);
  }

  // The details of the selected step, then `thenTab` in the next frame.
  defer(thenTab: () => void): void {
    cancelAnimationFrame(this.frame);
    const stepAt = this.store.get().step;
    this.frame = requestAnimationFrame(() => {
      const t0 = performance.now();
      const s = this.store.get();
      if (s.view === 'pipeline' && s.stage) this.renderStage();
      else if (s.node !== null) this.renderNode();
      const t1 = performance.now();
      this.frame = requestAnimationFrame(() => {
        const t2 = performance.now();
        if (this.store.get().step === stepAt) thenTab();
        this.lastMs = t1 - t0 + performance.now() - t2;
        document.body.dataset.detailsStep = String(stepAt);
      });
    });
  }

  renderNode(): void {
    const s = this.store.get();
    const { trace: t, traceB, cmp, step: i, node } = s;
    const other = traceB && cmp ? {
      trace: traceB, step: traceB.steps[i] ?? null,
      diff: cmp.steps.find((x) => x.index === i)?.nodes.get(node!) ?? null,
      source: cmp.metricsSource, refIsA: cmp.reference === 'a',
    } : null;
    this.inspector.render({ trace: t!, step: t!.steps[i], graph: graphOf(s), node: node!, other, canGoBack: s.backStack.length > 0 });
  }

  renderStage(): void {
    const s = this.store.get(), g = graphOf(s), stage = s.stage!;
    // The same stage in this step's graph (prefill and decode graphs differ in shapes only).
    const p = this.pipeline.stages;
    const cur = p ? [...p.byNode.values(), ...p.tail].find((x) => x.key === stage.key) ?? stage : stage;
    this.inspector.custom(stageDetails(g, cur, s.trace!.steps[s.step], (id) => {
      this.store.set({ view: 'ops' });
      this.goToNode(id);
    }));
  }
}
