// Playback: a timer (Player), and play over the selection (Playback): steps at `speed` per
// second, or nodes at 4 × `speed` per second, walking on into the next step.
import type { SelectionStore } from './state/selection';
import { setStep } from './state/navigation';

// Calls tick at a fixed interval until it returns false or is stopped.
export class Player {
  private timer: number | null = null;

  constructor(private onChange: (playing: boolean) => void) {}

  get playing(): boolean {
    return this.timer !== null;
  }

  start(intervalMs: number, tick: () => boolean): void {
    this.stop();
    this.timer = window.setInterval(() => { if (!tick()) this.stop(); }, intervalMs);
    this.onChange(true);
  }

  stop(): void {
    if (this.timer === null) return;
    clearInterval(this.timer);
    this.timer = null;
    this.onChange(false);
  }
}

// `nextNode`: moves to the next node (into the next step after the last); false at the end.
// A change of speed or mode restarts a running play at the new pace.
export class Playback {
  private player: Player;

  constructor(private store: SelectionStore, private nextNode: () => boolean, onChange: (playing: boolean) => void) {
    this.player = new Player(onChange);
    store.subscribe(['speed', 'playMode'], () => { if (this.player.playing) { this.player.stop(); this.toggle(); } });
  }

  stop(): void {
    this.player.stop();
  }

  toggle(): void {
    if (this.player.playing) { this.player.stop(); return; }
    const s = this.store.get(), t = s.trace;
    if (!t) return;
    if (s.playMode === 'steps') {
      if (s.step >= t.steps.length - 1) setStep(this.store, 0);   // at the end: from the start
      this.player.start(1000 / s.speed, () => {
        setStep(this.store, this.store.get().step + 1);
        return this.store.get().step < t.steps.length - 1;
      });
    } else {
      this.player.start(250 / s.speed, this.nextNode);
    }
  }
}
