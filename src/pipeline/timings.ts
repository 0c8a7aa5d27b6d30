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

  header(): string {
    return this.phases.map(([n, ms]) => `${n};dur=${ms}`).join(", ");
  }
}
