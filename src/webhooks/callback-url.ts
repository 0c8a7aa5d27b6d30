import { AppError } from "../errors";

/**
 * Where a webhook reply may be POSTed. In production: https, no credentials in
 * the URL, and no loopback / private / link-local / unspecified IP literal or
 * `localhost` name. Workers cannot resolve DNS first, so a public name that
 * resolves to a private address is left to the platform (Workers' fetch does
 * not reach private networks). `allowPrivate` (env ALLOW_PRIVATE_CALLBACKS=1,
 * local dev and tests only) lifts the https and address rules.
 */
export const MAX_CALLBACK_URL = 2048;

export function callbackUrlProblem(raw: string, allowPrivate: boolean): string | null {
  if (raw.length > MAX_CALLBACK_URL) return `longer than ${MAX_CALLBACK_URL} characters`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return "not an absolute URL";
  }
  if (url.protocol !== "https:" && !(allowPrivate && url.protocol === "http:")) return "must use https";
  if (url.username || url.password) return "must not carry credentials";
  if (allowPrivate) return null;
  const host = url.hostname.toLowerCase().replace(/\.$/, "");
  if (host === "localhost" || host.endsWith(".localhost")) return "must not name localhost";
  if (host.startsWith("[")) return isPublicIpv6(host.slice(1, -1)) ? null : "must not be a loopback, private or link-local address";
  const v4 = parseIpv4(host);
  if (v4 && !isPublicIpv4(v4)) return "must not be a loopback, private or link-local address";
  return null;
}

/** Throws BEM-094 unless the URL is an allowed callback target. */
export function assertCallbackUrl(raw: string, allowPrivate: boolean): URL {
  const problem = callbackUrlProblem(raw, allowPrivate);
  if (problem) throw new AppError("BEM-094", `callback_url ${problem}`);
  return new URL(raw);
}

export const allowPrivateCallbacks = (env: { ALLOW_PRIVATE_CALLBACKS?: string }): boolean => env.ALLOW_PRIVATE_CALLBACKS === "1";

// The URL parser already normalises IPv4 literals (e.g. 2130706433 → 127.0.0.1).
function parseIpv4(host: string): number[] | null {
  const parts = host.split(".");
  if (parts.length !== 4 || !parts.every((p) => /^[0-9]{1,3}$/.test(p))) return null;
  const n = parts.map(Number);
  return n.every((x) => x <= 255) ? n : null;
}

function isPublicIpv4([a, b]: number[]): boolean {
  if (a === undefined || b === undefined) return false;
  if (a === 0 || a === 10 || a === 127) return false; // unspecified, private, loopback
  if (a === 169 && b === 254) return false; // link-local (cloud metadata lives here)
  if (a === 172 && b >= 16 && b <= 31) return false;
  if (a === 192 && b === 168) return false;
  if (a === 100 && b >= 64 && b <= 127) return false; // carrier-grade NAT
  if (a >= 224) return false; // multicast, reserved, broadcast
  return true;
}

/** Expands an IPv6 literal (as the URL parser prints it) to 8 numbers. */
function ipv6Groups(addr: string): number[] | null {
  const halves = addr.split("::");
  if (halves.length > 2) return null;
  const parse = (s: string) => (s === "" ? [] : s.split(":").map((g) => Number.parseInt(g, 16)));
  const head = parse(halves[0] ?? "");
  const tail = halves.length === 2 ? parse(halves[1] ?? "") : [];
  const groups = halves.length === 2 ? [...head, ...Array<number>(8 - head.length - tail.length).fill(0), ...tail] : head;
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : null;
}

function isPublicIpv6(addr: string): boolean {
  const g = ipv6Groups(addr);
  if (!g) return false;
  const [g0 = 0, , , , , g5 = 0, g6 = 0, g7 = 0] = g;
  if (g.slice(0, 7).every((x) => x === 0) && g7 <= 1) return false; // :: and ::1
  if ((g0 & 0xfe00) === 0xfc00) return false; // fc00::/7 unique local
  if ((g0 & 0xffc0) === 0xfe80) return false; // fe80::/10 link-local
  if ((g0 & 0xff00) === 0xff00) return false; // multicast
  // IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible forms: judge the embedded IPv4 address.
  if (g.slice(0, 5).every((x) => x === 0) && (g5 === 0xffff || g5 === 0)) {
    return isPublicIpv4([g6 >> 8, g6 & 0xff, g7 >> 8, g7 & 0xff]);
  }
  return true;
}
