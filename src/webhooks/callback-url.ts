import { AppError } from "../errors";

/**
 * Where a webhook reply may be POSTed. In production: https, no credentials in
 * the URL, and no IP literal that is (or embeds, or routes to) a loopback,
 * private, link-local, site-local, unspecified or otherwise non-public address,
 * nor a `localhost` name — trailing dots removed first (`localhost..` is
 * localhost). Workers cannot resolve DNS first, so a public name that resolves
 * to a private address is left to the platform (Workers' fetch does not reach
 * private networks). `allowPrivate` (env ALLOW_PRIVATE_CALLBACKS=1, local dev
 * and tests only) lifts the https and address rules.
 */
export const MAX_CALLBACK_URL = 2048;

const PRIVATE = "must not be a loopback, private, link-local or otherwise non-public address";

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
  const host = canonicalHost(url.hostname);
  if (host === null) return "has an unusable host";
  if (host === "localhost" || host.endsWith(".localhost")) return "must not name localhost";
  if (host.startsWith("[")) return isPublicIpv6(host.slice(1, -1)) ? null : PRIVATE;
  const v4 = parseIpv4(host);
  if (v4 && !isPublicIpv4(v4)) return PRIVATE;
  return null;
}

/** Throws BEM-094 unless the URL is an allowed callback target. */
export function assertCallbackUrl(raw: string, allowPrivate: boolean): URL {
  const problem = callbackUrlProblem(raw, allowPrivate);
  if (problem) throw new AppError("BEM-094", `callback_url ${problem}`);
  return new URL(raw);
}

export const allowPrivateCallbacks = (env: { ALLOW_PRIVATE_CALLBACKS?: string }): boolean => env.ALLOW_PRIVATE_CALLBACKS === "1";

/**
 * The host with every trailing dot removed, re-parsed by the URL parser so IPv4
 * spellings normalise (`0x7f.1..` → 127.0.0.1; the parser only recognises a
 * number form with at most one trailing dot). Null when nothing usable is left.
 */
function canonicalHost(hostname: string): string | null {
  const stripped = hostname.toLowerCase().replace(/\.+$/, "");
  if (stripped === "") return null;
  if (stripped.startsWith("[")) return stripped;
  try {
    return new URL(`https://${stripped}/`).hostname;
  } catch {
    return null;
  }
}

function parseIpv4(host: string): number[] | null {
  const parts = host.split(".");
  if (parts.length !== 4 || !parts.every((p) => /^[0-9]{1,3}$/.test(p))) return null;
  const n = parts.map(Number);
  return n.every((x) => x <= 255) ? n : null;
}

function isPublicIpv4([a = 0, b = 0, c = 0]: number[]): boolean {
  if (a === 0 || a === 10 || a === 127) return false; // "this network", private, loopback
  if (a === 169 && b === 254) return false; // link-local (cloud metadata lives here)
  if (a === 172 && b >= 16 && b <= 31) return false;
  if (a === 192 && b === 168) return false;
  if (a === 100 && b >= 64 && b <= 127) return false; // carrier-grade NAT
  if (a === 192 && b === 0 && (c === 0 || c === 2)) return false; // IETF protocol assignments, documentation
  if (a === 198 && (b === 18 || b === 19)) return false; // benchmarking
  if (a === 198 && b === 51 && c === 100) return false; // documentation
  if (a === 203 && b === 0 && c === 113) return false; // documentation
  if (a >= 224) return false; // multicast, reserved, broadcast
  return true;
}

/** Expands an IPv6 literal (as the URL parser prints it: hex groups, no dotted tail) to 8 numbers. */
function ipv6Groups(addr: string): number[] | null {
  const halves = addr.split("::");
  if (halves.length > 2) return null;
  const parse = (s: string) => (s === "" ? [] : s.split(":").map((g) => (/^[0-9a-f]{1,4}$/.test(g) ? Number.parseInt(g, 16) : Number.NaN)));
  const head = parse(halves[0] ?? "");
  const tail = halves.length === 2 ? parse(halves[1] ?? "") : [];
  const fill = 8 - head.length - tail.length;
  if (halves.length === 2 && fill < 1) return null;
  const groups = halves.length === 2 ? [...head, ...Array<number>(fill).fill(0), ...tail] : head;
  return groups.length === 8 && groups.every((g) => Number.isInteger(g)) ? groups : null;
}

const v4Of = (hi = 0, lo = 0): number[] => [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff];

/**
 * Public unicast only. Forms that carry an IPv4 address (mapped, translated,
 * NAT64, 6to4, ISATAP) are judged by that address; forms that only make sense
 * inside a network or are never routed (IPv4-compatible, local-use NAT64,
 * Teredo, site-local, unique local, link-local, multicast, discard,
 * documentation, unspecified, loopback) are refused outright.
 */
function isPublicIpv6(addr: string): boolean {
  const g = ipv6Groups(addr);
  if (!g) return false;
  const [g0 = 0, g1 = 0, g2 = 0, , g4 = 0, g5 = 0, g6 = 0, g7 = 0] = g;
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 5) && g5 === 0xffff) return isPublicIpv4(v4Of(g6, g7)); // ::ffff:a.b.c.d mapped
  if (zeros(0, 4) && g4 === 0xffff && g5 === 0) return isPublicIpv4(v4Of(g6, g7)); // ::ffff:0:a.b.c.d translated
  if (zeros(0, 6)) return false; // ::, ::1 and IPv4-compatible ::a.b.c.d (deprecated, never routed)
  if (g0 === 0x64 && g1 === 0xff9b && zeros(2, 6)) return isPublicIpv4(v4Of(g6, g7)); // NAT64 64:ff9b::/96
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 1) return false; // local-use NAT64 64:ff9b:1::/48
  if (g0 === 0x64 && g1 === 0xff9b) return false; // the rest of 64:ff9b::/32 is unassigned
  if (g0 === 0x2002) return isPublicIpv4(v4Of(g1, g2)); // 6to4 embeds the relay's IPv4
  if (g0 === 0x2001 && g1 === 0) return false; // Teredo 2001::/32 (tunnels to an embedded IPv4)
  if (g0 === 0x2001 && g1 === 0xdb8) return false; // documentation
  if (g0 === 0x100 && zeros(1, 4)) return false; // discard-only 100::/64
  if ((g0 & 0xfe00) === 0xfc00) return false; // fc00::/7 unique local
  if ((g0 & 0xffc0) === 0xfe80) return false; // fe80::/10 link-local
  if ((g0 & 0xffc0) === 0xfec0) return false; // fec0::/10 site-local (deprecated, still routed inside sites)
  if ((g0 & 0xff00) === 0xff00) return false; // multicast
  if ((g4 & 0xfdff) === 0 && g5 === 0x5efe) return isPublicIpv4(v4Of(g6, g7)); // ISATAP interface id embeds an IPv4
  return true;
}
