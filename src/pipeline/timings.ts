/** Phase durations of one run, reported as a Server-Timing header (no payload data, only names and ms). */
export class Timings {
  private last = Date.now();
  private readonly phases: [string, number][] = [];

  /** Ends the current phase under `name`. */
  lap(name: string): void {
    const now = Date.now();
    this.phases.push([name, now - this.last]);
    this.last = now;
  }

  /** The phases so far, e.g. to carry a run's timings from the thread object back to the Worker. */
  get entries(): [string, number][] {
    return this.phases.map(([n, ms]) => [n, ms]);
  }

  /** Appends phases measured elsewhere (the thread object's part of a run). */
  add(entries: readonly (readonly [string, number])[]): void {
    for (const [n, ms] of entries) this.phases.push([n, ms]);
    this.last = Date.now();
  }

  header(): string {
    return this.phases.map(([n, ms]) => `${n};dur=${ms}`).join(", ");
  }
}
