/**
 * Runs the shell snippets of the docs against the worker under test, without a shell: workerd has
 * none. It knows the little the snippets use — variables, `export`, `$(…)`, pipes, quoting, line
 * continuations, comments — and the commands they call: curl (sent to the worker), node -pe reading
 * a JSON path from its input, echo, printf '%s', date +%s, openssl dgst -sha256 -hmac, sed 's/…/…/'.
 * Anything else is an error, so a snippet that grows a new command fails here until it is taught.
 */

type Part = { lit: string } | { var: string } | { sub: string };
type Word = Part[];
type Pipeline = Word[][];

export type Sent = { method: string; path: string; status: number; body: string };

export type ShellOptions = {
  /** Sends a request to the worker. */
  fetch: (req: Request) => Promise<Response>;
  /** A GET answering 404 is asked again until this many ms have passed (for "a moment later"). */
  settleMs?: number;
};

const NAME = /^[A-Za-z_][A-Za-z0-9_]*/;

/** Parses a script into pipelines of simple commands; `$(…)` bodies stay text until they run. */
export function parse(src: string): Pipeline[] {
  let i = 0;
  const out: Pipeline[] = [];
  let pipeline: Word[][] = [];
  let command: Word[] = [];
  let word: Word | null = null;
  const lit = (s: string) => {
    word ??= [];
    const last = word.at(-1);
    if (last && "lit" in last) last.lit += s;
    else word.push({ lit: s });
  };
  const endWord = () => {
    if (word) command.push(word);
    word = null;
  };
  const endCommand = () => {
    endWord();
    if (command.length) pipeline.push(command);
    command = [];
  };
  const endPipeline = () => {
    endCommand();
    if (pipeline.length) out.push(pipeline);
    pipeline = [];
  };
  /** `$(`…`)`: its text, quotes and nesting respected. */
  const substitution = (): string => {
    const start = i;
    let depth = 1;
    let quote: string | null = null;
    while (i < src.length) {
      const c = src[i]!;
      if (quote) {
        if (c === "\\" && quote === '"') i++;
        else if (c === quote) quote = null;
      } else if (c === "'" || c === '"') quote = c;
      else if (c === "(") depth++;
      else if (c === ")" && --depth === 0) return src.slice(start, i++);
      i++;
    }
    throw new Error("unclosed $(");
  };
  const dollar = () => {
    // at src[i] === "$"
    if (src[i + 1] === "(") {
      i += 2;
      (word ??= []).push({ sub: substitution() });
    } else if (src[i + 1] === "{") {
      const end = src.indexOf("}", i);
      (word ??= []).push({ var: src.slice(i + 2, end) });
      i = end + 1;
    } else {
      const name = NAME.exec(src.slice(i + 1))?.[0];
      if (!name) {
        lit("$");
        i++;
      } else {
        (word ??= []).push({ var: name });
        i += 1 + name.length;
      }
    }
  };
  while (i < src.length) {
    const c = src[i]!;
    if (c === "\\" && src[i + 1] === "\n") i += 2;
    else if (c === " " || c === "\t") {
      endWord();
      i++;
    } else if (c === "#" && word === null) {
      while (i < src.length && src[i] !== "\n") i++;
    } else if (c === "\n" || c === ";") {
      endPipeline();
      i++;
    } else if (c === "&" && src[i + 1] === "&") {
      endPipeline();
      i += 2;
    } else if (c === "|") {
      endCommand();
      i++;
    } else if (c === "'") {
      const end = src.indexOf("'", i + 1);
      if (end < 0) throw new Error("unclosed '");
      lit(src.slice(i + 1, end));
      i = end + 1;
    } else if (c === '"') {
      i++;
      word ??= [];
      while (src[i] !== '"') {
        if (i >= src.length) throw new Error('unclosed "');
        if (src[i] === "\\" && '"\\$`'.includes(src[i + 1]!)) {
          lit(src[i + 1]!);
          i += 2;
        } else if (src[i] === "$") dollar();
        else lit(src[i++]!);
      }
      i++;
    } else if (c === "$") dollar();
    else if (c === "\\") {
      lit(src[i + 1]!);
      i += 2;
    } else lit(src[i++]!);
  }
  endPipeline();
  return out;
}

/** One shell session: variables persist from one snippet to the next, as in a terminal. */
export class DocShell {
  readonly vars = new Map<string, string>();
  readonly sent: Sent[] = [];
  constructor(private readonly opts: ShellOptions) {}

  /** Runs a script; answers what it printed. */
  async run(src: string): Promise<string> {
    let printed = "";
    for (const pipeline of parse(src)) printed += await this.#pipeline(pipeline);
    return printed;
  }

  async #expand(word: Word): Promise<string> {
    let s = "";
    for (const part of word) {
      if ("lit" in part) s += part.lit;
      else if ("var" in part) s += this.vars.get(part.var) ?? "";
      else s += (await this.run(part.sub)).replace(/\n+$/, "");
    }
    return s;
  }

  async #pipeline(pipeline: Pipeline): Promise<string> {
    let input = "";
    for (const command of pipeline) {
      const words = await Promise.all(command.map((w) => this.#expand(w)));
      // Leading NAME=value words: assignments (a command after them is not something the snippets do).
      while (words.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[0]!)) {
        const [name, ...value] = words.shift()!.split("=");
        this.vars.set(name!, value.join("="));
      }
      if (words.length === 0) continue;
      input = await this.#command(words, input);
    }
    return input;
  }

  async #command([name, ...args]: string[], input: string): Promise<string> {
    switch (name) {
      case "export":
        for (const a of args) {
          const [n, ...v] = a.split("=");
          if (v.length) this.vars.set(n!, v.join("="));
        }
        return "";
      case "curl":
        return this.#curl(args);
      case "echo":
        return `${args.join(" ")}\n`;
      case "printf":
        if (args[0] !== "%s") throw new Error(`printf ${args[0]}: only %s is known here`);
        return args.slice(1).join("");
      case "date":
        if (args[0] !== "+%s") throw new Error(`date ${args[0]}: only +%s is known here`);
        return `${Math.floor(Date.now() / 1000)}\n`;
      case "node":
        return `${nodePrint(args, input)}\n`;
      case "openssl":
        return `SHA2-256(stdin)= ${await hmac(args, input)}\n`;
      case "sed":
        return sed(args, input);
      default:
        throw new Error(`the docs' shell does not know the command ${name}`);
    }
  }

  async #curl(args: string[]): Promise<string> {
    let method: string | undefined;
    let url: string | undefined;
    let body: string | undefined;
    const headers = new Headers();
    for (let i = 0; i < args.length; i++) {
      const a = args[i]!;
      if (a === "-s" || a === "-N" || a === "-sN") continue;
      if (a === "-X") method = args[++i];
      else if (a === "-H") {
        const h = args[++i]!;
        const colon = h.indexOf(":");
        headers.set(h.slice(0, colon).trim(), h.slice(colon + 1).trim());
      } else if (a === "-d" || a === "--data") body = args[++i];
      else if (a.startsWith("-")) throw new Error(`curl ${a}: not known here`);
      else url = a;
    }
    if (!url) throw new Error("curl without a URL");
    method ??= body === undefined ? "GET" : "POST";
    if (body !== undefined && !headers.has("content-type")) headers.set("content-type", "application/x-www-form-urlencoded");
    const { pathname, search } = new URL(/^[a-z]+:\/\//i.test(url) ? url : `http://${url}`); // curl takes a host without a scheme
    const deadline = Date.now() + (this.opts.settleMs ?? 0);
    for (;;) {
      const res = await this.opts.fetch(new Request(`http://localhost${pathname}${search}`, { method, headers, body }));
      const text = await res.text();
      if (res.status === 404 && method === "GET" && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
      this.sent.push({ method, path: `${pathname}${search}`, status: res.status, body: text });
      return text;
    }
  }
}

/** `node -pe 'JSON.parse(require("fs").readFileSync(0)).a.b.at(-1)[0]'`: the path read from the input. */
function nodePrint(args: string[], input: string): string {
  const expr = args[0] === "-pe" ? args[1] : undefined;
  const m = expr && /^JSON\.parse\(require\("fs"\)\.readFileSync\(0\)\)((?:\.[A-Za-z_]\w*|\.at\(-?\d+\)|\[\d+\])*)$/.exec(expr);
  if (!m) throw new Error(`node ${args.join(" ")}: only -pe reading a JSON path from the input is known here`);
  let value: unknown = JSON.parse(input);
  for (const [, at, key, index] of m[1]!.matchAll(/\.at\((-?\d+)\)|\.([A-Za-z_]\w*)|\[(\d+)\]/g)) {
    if (value === null || typeof value !== "object") throw new Error(`node -pe: nothing at ${m[1]} in ${input.slice(0, 200)}`);
    if (at !== undefined) value = (value as unknown[]).at(Number(at));
    else if (index !== undefined) value = (value as unknown[])[Number(index)];
    else value = (value as Record<string, unknown>)[key!];
  }
  if (value === undefined) throw new Error(`node -pe: ${m[1]} is undefined in ${input.slice(0, 200)}`);
  return typeof value === "string" ? value : JSON.stringify(value);
}

async function hmac(args: string[], input: string): Promise<string> {
  const at = args.indexOf("-hmac");
  if (args[0] !== "dgst" || !args.includes("-sha256") || at < 0) throw new Error(`openssl ${args.join(" ")}: only dgst -sha256 -hmac is known here`);
  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(args[at + 1]), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(input)));
  return [...mac].map((b) => b.toString(16).padStart(2, "0")).join("");
}

function sed(args: string[], input: string): string {
  const m = args.length === 1 ? /^s\/(.*)\/(.*)\/$/.exec(args[0]!) : null;
  if (!m) throw new Error(`sed ${args.join(" ")}: only s/regex/replacement/ is known here`);
  const re = new RegExp(m[1]!);
  return input
    .split("\n")
    .map((line) => line.replace(re, m[2]!))
    .join("\n");
}
