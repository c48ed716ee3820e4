// Playback timer: calls tick at a fixed interval until it returns false or is stopped.
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
