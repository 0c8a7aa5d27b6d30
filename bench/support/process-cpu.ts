// CPU time a process group has used (user + system, its live processes), from /proc: what a `wrangler dev`
// server's workerd spends on a turn, whatever else shares the machine (wall-clock profiles count time the
// thread waited for a core too).
import { readdirSync, readFileSync } from "node:fs";

const TICK_MS = 10; // USER_HZ is 100 on Linux

/** Milliseconds of CPU used so far by the live processes of process group `group`. */
export function groupCpuMs(group: number): number {
  let ticks = 0;
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {
      continue; // gone meanwhile
    }
    // Fields after the command's closing parenthesis: state ppid pgrp … utime (14th) stime (15th).
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(f[2]) === group) ticks += Number(f[11]) + Number(f[12]);
  }
  return ticks * TICK_MS;
}
