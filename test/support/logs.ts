import { beforeEach, onTestFailed } from "vitest";
import { type LogRecord, setLogSink } from "../../src/log";

/**
 * Tests write the worker's log lines here instead of the console: a test that
 * fails on purpose (a provider outage, a bad body) no longer prints dozens of
 * expected `{"level":"error"}` lines. A failing test prints what it logged, so
 * a real error still shows where it matters; `loggedLines()` lets a test
 * assert on what was logged (e.g. that no secret reached it).
 */
const captured: { record: LogRecord; line: string }[] = [];

export function installLogCapture(): void {
  setLogSink((record, line) => {
    captured.push({ record, line });
  });
  beforeEach(() => {
    captured.length = 0;
    onTestFailed(() => {
      for (const c of captured) console.error(c.line);
    });
  });
}

/** Every line logged since the current test started (as written, JSON). */
export const loggedLines = (): readonly string[] => captured.map((c) => c.line);

/** The records logged since the current test started. */
export const loggedRecords = (): readonly LogRecord[] => captured.map((c) => c.record);
