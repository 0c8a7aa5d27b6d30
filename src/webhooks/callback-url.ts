import { AppError } from "../core/errors";

/**
 * Where a webhook reply may be POSTed. In production: https, no credentials in
 * the URL, and no IP literal that is (or embeds, or routes to) a loopback,
 * private, link-local, site-local, unspecified, IANA special-purpose or otherwise non-public address,
 * nor a `localhost` name — trailing dots removed first (`localhost..` is
 * localhost). Workers cannot resolve DNS first, so a public name that resolves
 * to a private address is left to the platform (Workers' fetch does not reach
 * private networks). `allowPrivate` (env ALLOW_PRIVATE_CALLBACKS=1, local dev
 * and tests only) lifts the https and address rules.
 */
export const MAX_CALLBACK_URL = 2048;

const PRIVATE = "must not be a loopback, private, link-local, reserved (IANA special-purpose) or otherwise non-public address";

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

/** True when the first `bits` bits of `addr` equal those of `net` (both as 16-bit groups, most significant first). */
function inPrefix(addr: readonly number[], net: readonly number[], bits: number): boolean {
  for (let i = 0; bits > 0; i++, bits -= 16) {
    const mask = bits >= 16 ? 0xffff : (0xffff << (16 - bits)) & 0xffff;
    if (((addr[i] ?? 0) & mask) !== ((net[i] ?? 0) & mask)) return false;
  }
  return true;
}

const v4Groups = ([a = 0, b = 0, c = 0, d = 0]: readonly number[]): number[] => [(a << 8) | b, (c << 8) | d];

/**
 * Every block of the IANA IPv4 Special-Purpose Address Registry, globally reachable or not
 * (a webhook receiver never sits on an anycast service or AS112), plus multicast and 240/4.
 */
const IPV4_RESERVED: readonly [readonly number[], number][] = (
  [
    [[0, 0, 0, 0], 8], // "this network"
    [[10, 0, 0, 0], 8], // private
    [[100, 64, 0, 0], 10], // shared address space (carrier-grade NAT)
    [[127, 0, 0, 0], 8], // loopback
    [[169, 254, 0, 0], 16], // link-local (cloud metadata lives here)
    [[172, 16, 0, 0], 12], // private
    [[192, 0, 0, 0], 24], // IETF protocol assignments (DS-Lite, PCP and TURN anycast, NAT64 discovery …)
    [[192, 0, 2, 0], 24], // documentation TEST-NET-1
    [[192, 31, 196, 0], 24], // AS112-v4
    [[192, 52, 193, 0], 24], // AMT
    [[192, 88, 99, 0], 24], // deprecated 6to4 relay anycast
    [[192, 168, 0, 0], 16], // private
    [[192, 175, 48, 0], 24], // AS112 direct delegation
    [[198, 18, 0, 0], 15], // benchmarking
    [[198, 51, 100, 0], 24], // documentation TEST-NET-2
    [[203, 0, 113, 0], 24], // documentation TEST-NET-3
    [[224, 0, 0, 0], 4], // multicast
    [[240, 0, 0, 0], 4], // reserved, and the limited broadcast address
  ] as const
).map(([net, bits]) => [v4Groups(net), bits] as const);

function isPublicIpv4(octets: readonly number[]): boolean {
  const addr = v4Groups(octets);
  return !IPV4_RESERVED.some(([net, bits]) => inPrefix(addr, net, bits));
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
 * Blocks inside global unicast 2000::/3 that the IANA IPv6 Special-Purpose Address Registry
 * sets apart (everything outside 2000::/3 is refused before these are looked at).
 */
const IPV6_RESERVED: readonly [readonly number[], number][] = [
  [[0x2001, 0], 23], // IETF protocol assignments: Teredo, PCP / TURN / DNS-SD anycast, benchmarking, AMT, AS112, ORCHID, DETs
  [[0x2001, 0xdb8], 32], // documentation
  [[0x2620, 0x4f, 0x8000], 48], // AS112 direct delegation
  [[0x3fff, 0], 20], // documentation (RFC 9637)
];

/**
 * Public unicast only. Forms that carry an IPv4 address (mapped, translated, NAT64, 6to4,
 * ISATAP) are judged by that address. Anything outside global unicast 2000::/3 is refused: the
 * IPv6 Address Space registry leaves the rest reserved by the IETF, unique local, link-local,
 * site-local or multicast, and the special-purpose blocks there (loopback, unspecified,
 * IPv4-compatible, local-use NAT64, discard-only, the dummy prefix, SRv6 SIDs) go with it.
 * Inside it, the special-purpose blocks of IPV6_RESERVED are refused.
 */
function isPublicIpv6(addr: string): boolean {
  const g = ipv6Groups(addr);
  if (!g) return false;
  const [g0 = 0, g1 = 0, g2 = 0, , g4 = 0, g5 = 0, g6 = 0, g7 = 0] = g;
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 5) && g5 === 0xffff) return isPublicIpv4(v4Of(g6, g7)); // ::ffff:a.b.c.d mapped
  if (zeros(0, 4) && g4 === 0xffff && g5 === 0) return isPublicIpv4(v4Of(g6, g7)); // ::ffff:0:a.b.c.d translated
  if (g0 === 0x64 && g1 === 0xff9b && zeros(2, 6)) return isPublicIpv4(v4Of(g6, g7)); // NAT64 64:ff9b::/96
  if (!inPrefix(g, [0x2000], 3)) return false;
  if (g0 === 0x2002) return isPublicIpv4(v4Of(g1, g2)); // 6to4 embeds the relay's IPv4
  if (IPV6_RESERVED.some(([net, bits]) => inPrefix(g, net, bits))) return false;
  if ((g4 & 0xfdff) === 0 && g5 === 0x5efe) return isPublicIpv4(v4Of(g6, g7)); // ISATAP interface id embeds an IPv4
  return true;
}
