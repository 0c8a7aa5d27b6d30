/**
 * models.yaml -> validated ModelsFile, with file:line in every error.
 * Build-time and library code only: this module imports the YAML parser, so
 * nothing the worker loads at runtime may import it (runtime reads
 * models.generated.ts instead).
 */
import { type Document, LineCounter, parseDocument } from "yaml";
import { AppError, type ErrorCode } from "../core/errors";
import { EMBEDDED_NAME } from "../config/embedder-config";
import { AgentConfig, ModelConfigFields, ModelsFile } from "../config/model-config";
import { aliasConflicts } from "./aliases";

type Path = readonly (string | number)[];
type Problem = { path: Path; message: string };

export type LoadOptions = {
  /** Non-fatal notes, e.g. an unknown key that will be ignored (probably a typo). */
  onWarning?: (message: string) => void;
};

/**
 * Parses and validates models.yaml text. Throws AppError BEM-044 (YAML or
 * schema), BEM-048 (a literal API key), BEM-042 (duplicate name, or an alias that overlaps another) or BEM-045
 * (default_model / agent model not in `models:`); every message line reads
 * `file:line: path: what is wrong`.
 */
export function loadModelsFromYaml(text: string, fileName = "models.yaml", options: LoadOptions = {}): ModelsFile {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const at = (path: Path) => `${fileName}:${lineOf(doc, lines, path)}: ${formatPath(path)}`;
  const fail = (code: ErrorCode, problems: Problem[]): never => {
    throw new AppError(code, problems.map((p) => `${at(p.path)}${p.path.length ? ": " : ""}${p.message}`).join("\n"));
  };

  if (doc.errors.length > 0) {
    const msg = doc.errors
      .slice(0, 10)
      .map((e) => `${fileName}:${lines.linePos(e.pos[0]).line}: ${firstLine(e.message)}`)
      .join("\n");
    throw new AppError("BEM-044", msg);
  }

  const raw: unknown = doc.toJS({ maxAliasCount: 100 });

  const secrets = findLiteralSecrets(raw);
  if (secrets.length > 0) fail("BEM-048", secrets);

  const parsed = ModelsFile.safeParse(raw);
  if (!parsed.success) {
    fail(
      "BEM-044",
      parsed.error.issues.slice(0, 20).map((i) => ({ path: i.path.filter(isKey), message: i.message })),
    );
  }
  const file = parsed.data as ModelsFile;

  const embedders = embedderProblems(file);
  if (embedders.length > 0) fail("BEM-044", embedders);

  const dupes = [
    ...duplicates(
      file.models.map((m) => m.name),
      "models",
      "model",
      (i) => lineOf(doc, lines, ["models", i, "name"]),
    ),
    ...duplicates(
      file.agents.map((a) => a.name),
      "agents",
      "agent",
      (i) => lineOf(doc, lines, ["agents", i, "name"]),
    ),
    ...aliasConflicts(file.models).map((c) => ({ path: ["models", c.model, "aliases", c.alias], message: c.message })),
  ];
  if (dupes.length > 0) fail("BEM-042", dupes);

  const known = new Set(file.models.map((m) => m.name));
  const unknownRefs: Problem[] = [];
  if (file.default_model !== null && !known.has(file.default_model)) {
    unknownRefs.push({ path: ["default_model"], message: `names unknown model "${file.default_model}"` });
  }
  file.agents.forEach((a, i) => {
    if (a.extract?.model !== undefined && !known.has(a.extract.model)) {
      unknownRefs.push({ path: ["agents", i, "extract", "model"], message: `agent ${a.name} extracts with unknown model "${a.extract.model}"` });
    }
    if (a.model !== undefined && !known.has(a.model)) {
      unknownRefs.push({ path: ["agents", i, "model"], message: `agent ${a.name} names unknown model "${a.model}"` });
    }
  });
  if (unknownRefs.length > 0) fail("BEM-045", unknownRefs);

  if (options.onWarning) for (const w of unknownKeys(raw)) options.onWarning(`${at(w.path)}: ${w.message}`);
  return file;
}

/** An `embedder:` that names no embedder, or two embedders of one name: the file is refused (BEM-044, with the line). */
function embedderProblems(file: ModelsFile): Problem[] {
  const names = new Set([EMBEDDED_NAME]);
  const out: Problem[] = [];
  file.embedders.forEach((e, i) => {
    if (names.has(e.name)) out.push({ path: ["embedders", i, "name"], message: `duplicate embedder name "${e.name}"` });
    names.add(e.name);
  });
  const known = [...names].join(", ");
  if (!names.has(file.embedder)) out.push({ path: ["embedder"], message: `names unknown embedder "${file.embedder}" (known: ${known})` });
  file.agents.forEach((a, i) => {
    if (a.embedder !== undefined && !names.has(a.embedder))
      out.push({ path: ["agents", i, "embedder"], message: `agent ${a.name} names unknown embedder "${a.embedder}" (known: ${known})` });
  });
  return out;
}

const isKey = (k: PropertyKey): k is string | number => typeof k !== "symbol";
const firstLine = (s: string) => s.split("\n")[0] ?? s;

function formatPath(path: Path): string {
  let out = "";
  for (const k of path) out += typeof k === "number" ? `[${k}]` : out ? `.${k}` : k;
  return out;
}

/** The line of the deepest node that exists along `path` (a missing key reports its parent). */
function lineOf(doc: Document, lines: LineCounter, path: Path): number {
  for (let n = path.length; n >= 0; n--) {
    const node: unknown = n === 0 ? doc.contents : doc.getIn(path.slice(0, n), true);
    if (node && typeof node === "object" && "range" in node) {
      const range = (node as { range?: [number, number, number] | null }).range;
      if (range) return lines.linePos(range[0]).line;
    }
  }
  return 1;
}

function duplicates(names: string[], list: string, kind: string, line: (i: number) => number): Problem[] {
  const first = new Map<string, number>();
  const out: Problem[] = [];
  names.forEach((name, i) => {
    const seen = first.get(name);
    if (seen === undefined) first.set(name, i);
    else out.push({ path: [list, i, "name"], message: `duplicate ${kind} name "${name}" (first at line ${line(seen)})` });
  });
  return out;
}

// Field names that would hold a key itself; api_key_env (the secret's NAME) is the allowed form.
const SECRET_FIELD = /^(api[_-]?key|apikey|key|secret|secret[_-]?key|client[_-]?secret|token|access[_-]?token|auth[_-]?token|password|authorization|bearer)$/i;
// Shapes of real provider keys and bearer credentials.
const SECRET_VALUE =
  /^(sk-[A-Za-z0-9_-]{16,}|gsk_[A-Za-z0-9]{16,}|nvapi-[A-Za-z0-9_-]{16,}|xai-[A-Za-z0-9]{16,}|AIza[0-9A-Za-z_-]{30,}|hf_[A-Za-z0-9]{16,}|Bearer\s+\S{8,})$/;

/** Literal keys anywhere in the file; the message never repeats the value. */
function findLiteralSecrets(raw: unknown): Problem[] {
  const out: Problem[] = [];
  const hint = "looks like a literal API key; store it as a secret (wrangler secret put NAME) and write provider_config.api_key_env: NAME";
  const walk = (v: unknown, path: (string | number)[], depth: number): void => {
    if (depth > 32 || out.length >= 10) return;
    if (typeof v === "string") {
      const field = path[path.length - 1];
      // Field names only count under models: (provider_config, extra); agent settings may use "key" innocently.
      const named = path[0] === "models" && typeof field === "string" && SECRET_FIELD.test(field) && v.trim() !== "";
      if (named || SECRET_VALUE.test(v.trim())) out.push({ path, message: hint });
    } else if (Array.isArray(v)) {
      for (const [i, x] of v.entries()) walk(x, [...path, i], depth + 1);
    } else if (v && typeof v === "object") {
      for (const [k, x] of Object.entries(v)) walk(x, [...path, k], depth + 1);
    }
  };
  walk(raw, [], 0);
  return out;
}

const MODEL_KEYS = new Set(Object.keys(ModelConfigFields.shape));
const AGENT_KEYS = new Set(Object.keys(AgentConfig.shape));
const TOP_KEYS = new Set(Object.keys(ModelsFile.shape));

function unknownKeys(raw: unknown): Problem[] {
  const out: Problem[] = [];
  const check = (obj: unknown, allowed: Set<string>, path: (string | number)[]) => {
    if (!obj || typeof obj !== "object" || Array.isArray(obj)) return;
    for (const k of Object.keys(obj)) if (!allowed.has(k)) out.push({ path: [...path, k], message: "unknown key, ignored" });
  };
  check(raw, TOP_KEYS, []);
  const r = raw as { models?: unknown; agents?: unknown };
  if (Array.isArray(r.models)) for (const [i, m] of r.models.entries()) check(m, MODEL_KEYS, ["models", i]);
  if (Array.isArray(r.agents)) for (const [i, a] of r.agents.entries()) check(a, AGENT_KEYS, ["agents", i]);
  return out;
}
