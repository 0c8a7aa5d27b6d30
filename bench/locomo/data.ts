// Reads LoCoMo conversations (Maharana et al., ACL 2024; github.com/snap-research/locomo) in either
// published shape: one file per conversation (the `locomo10_v2` folder: speaker_a, session_N,
// session_N_date_time, session_N_observation, qa at the top level), or `data/locomo10.json` (an
// array of {sample_id, conversation: {...sessions}, observation: {...}, qa}).
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { basename, dirname, join } from "node:path";

export type Turn = { dia: string; speaker: string; text: string; session: number; at: number };
export type Observation = { text: string; dias: string[] };
export type Question = { question: string; category: number; evidence: string[] };
export type Conversation = { id: string; speakerA: string; speakerB: string; turns: Turn[]; observations: Observation[]; questions: Question[] };

type Raw = Record<string, unknown>;

/** dia ids in an evidence or observation entry: "D3:12", "D8:6; D9:17", and the odd "D:11:26". */
export function diaIds(v: unknown): string[] {
  const parts = Array.isArray(v) ? v : [v];
  const out: string[] = [];
  for (const p of parts) for (const m of String(p).matchAll(/D:?(\d+):(\d+)/g)) out.push(`D${m[1]}:${m[2]}`);
  return out;
}

const MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"];

/** "1:56 pm on 8 May, 2023" → Unix ms (UTC); NaN when it does not parse. */
export function sessionTime(s: string): number {
  const m = /(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})/i.exec(s);
  if (!m) return Number.NaN;
  const month = MONTHS.indexOf(m[5]!.toLowerCase());
  let hour = Number(m[1]) % 12;
  if (m[3]!.toLowerCase() === "pm") hour += 12;
  return Date.UTC(Number(m[6]), month, Number(m[4]), hour, Number(m[2]));
}

function parse(id: string, conv: Raw, observation: Raw, qa: unknown[]): Conversation {
  const turns: Turn[] = [];
  const sessions = Object.keys(conv)
    .map((k) => /^session_(\d+)$/.exec(k))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]))
    .sort((a, b) => a - b);
  for (const n of sessions) {
    const at = sessionTime(String(conv[`session_${n}_date_time`] ?? ""));
    for (const t of conv[`session_${n}`] as Raw[]) {
      turns.push({ dia: String(t.dia_id), speaker: String(t.speaker), text: String(t.text ?? ""), session: n, at });
    }
  }
  const observations: Observation[] = [];
  for (const [k, v] of Object.entries(observation)) {
    if (!/^session_\d+_observation$/.test(k)) continue;
    for (const list of Object.values(v as Record<string, unknown[]>)) {
      for (const o of list as [string, unknown][]) observations.push({ text: String(o[0]), dias: diaIds(o[1]) });
    }
  }
  const questions = (qa as Raw[]).map((q) => ({ question: String(q.question), category: Number(q.category), evidence: diaIds(q.evidence) }));
  return { id, speakerA: String(conv.speaker_a), speakerB: String(conv.speaker_b), turns, observations, questions };
}

/** Every conversation under `dir` (per-conversation files, or locomo10.json), in file order. */
export function loadConversations(dir: string): Conversation[] {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new Error(`LOCOMO_DIR ${dir} is not a directory (see bench/README.md, "LoCoMo")`);
  const out: Conversation[] = [];
  for (const f of readdirSync(dir)
    .filter((n) => n.endsWith(".json"))
    .sort()) {
    const raw: unknown = JSON.parse(readFileSync(join(dir, f), "utf8"));
    if (Array.isArray(raw)) {
      for (const s of raw as Raw[]) {
        out.push(parse(String(s.sample_id).replace(/[^A-Za-z0-9]/g, ""), s.conversation as Raw, (s.observation ?? {}) as Raw, s.qa as unknown[]));
      }
    } else {
      const r = raw as Raw;
      out.push(parse(basename(f, ".json").replace(/[^A-Za-z0-9]/g, ""), r, r, r.qa as unknown[]));
    }
  }
  return out;
}

/** LOCOMO_DIR, else the shared data beside the checkout `root` (a worktree's: beside the main checkout). */
export function locomoDir(root: string): string {
  if (process.env.LOCOMO_DIR) return process.env.LOCOMO_DIR;
  const here = join(root, "../shared/data/locomo-dev");
  if (existsSync(here)) return here;
  const common = execFileSync("git", ["rev-parse", "--path-format=absolute", "--git-common-dir"], { cwd: root, encoding: "utf8" }).trim();
  return join(dirname(common), "../shared/data/locomo-dev");
}
