import { describe, expect, it } from "vitest";
import { callbackUrlProblem } from "../../src/webhooks/callback-url";

/**
 * Issue 11, finding 8: IPv6 forms that embed or route to a private IPv4/IPv6
 * address, and hosts with trailing dots, passed the callback check. Every such
 * form is refused; public addresses (and public embedded ones) still pass.
 */
const host = (h: string) => `https://${h}/hook`;

const refused: [string, string][] = [
  // The examples.
  ["[::ffff:0:7f00:1]", "IPv4-translated 127.0.0.1 (::ffff:0:0/96)"],
  ["[64:ff9b::7f00:1]", "NAT64 well-known prefix → 127.0.0.1"],
  ["[2002:7f00:1::]", "6to4 of 127.0.0.1"],
  ["[64:ff9b::a9fe:a9fe]", "NAT64 → 169.254.169.254 (cloud metadata)"],
  ["[fec0::1]", "site-local fec0::/10"],
  ["169.254.169.254..", "metadata address with two trailing dots"],
  ["localhost..", "localhost with two trailing dots"],
  // More of the same families.
  ["169.254.169.254.", "one trailing dot"],
  ["169.254.169.254...", "three trailing dots"],
  ["127.0.0.1..", "loopback with trailing dots"],
  ["0x7f.1..", "hex loopback with trailing dots"],
  ["api.localhost..", "a localhost subdomain with trailing dots"],
  ["[::ffff:7f00:1]", "IPv4-mapped loopback, hex"],
  ["[::ffff:a9fe:a9fe]", "IPv4-mapped metadata"],
  ["[::ffff:0:a00:1]", "IPv4-translated 10.0.0.1"],
  ["[::ffff:0:c0a8:101]", "IPv4-translated 192.168.1.1"],
  ["[::127.0.0.1]", "IPv4-compatible loopback"],
  ["[::a9fe:a9fe]", "IPv4-compatible metadata"],
  ["[::8.8.8.8]", "IPv4-compatible (deprecated, never routed)"],
  ["[64:ff9b::a00:1]", "NAT64 → 10.0.0.1"],
  ["[64:ff9b::c0a8:1]", "NAT64 → 192.168.0.1"],
  ["[64:ff9b::]", "NAT64 → 0.0.0.0"],
  ["[64:ff9b:1::808:808]", "local-use NAT64 64:ff9b:1::/48"],
  ["[64:ff9b:1:abcd::1]", "local-use NAT64, any address"],
  ["[2002:a9fe:a9fe::1]", "6to4 of 169.254.169.254"],
  ["[2002:a00:1::1]", "6to4 of 10.0.0.1"],
  ["[2002:c0a8:101::]", "6to4 of 192.168.1.1"],
  ["[2002:ac10:1::]", "6to4 of 172.16.0.1"],
  ["[2001:0:4136:e378:8000:63bf:3fff:fdd2]", "Teredo 2001::/32"],
  ["[2001::1]", "Teredo prefix"],
  ["[fec0::]", "site-local"],
  ["[feff::1]", "site-local, top of fec0::/10"],
  ["[fe80::1%25eth0]", "link-local with a zone"],
  ["[febf::1]", "link-local, top of fe80::/10"],
  ["[fc00::]", "unique local"],
  ["[fdff:ffff::1]", "unique local"],
  ["[::]", "unspecified"],
  ["[::1]", "loopback"],
  ["[0:0:0:0:0:0:0:1]", "loopback, long form"],
  ["[ff02::1]", "multicast"],
  ["[100::1]", "discard-only 100::/64"],
  ["[2001:db8::1]", "documentation 2001:db8::/32"],
  ["[fe80::5efe:a9fe:a9fe]", "ISATAP interface id embedding 169.254.169.254"],
  ["[2606:4700::5efe:7f00:1]", "ISATAP interface id embedding 127.0.0.1"],
  ["192.0.0.1", "IETF protocol assignments 192.0.0.0/24"],
  ["198.18.0.1", "benchmarking 198.18.0.0/15"],
  ["255.255.255.255", "broadcast"],
];

/**
 * Issue 25, finding 15: `3fff::/20` and other reserved IPv6 ranges passed. Every entry of the
 * IANA IPv4 and IPv6 Special-Purpose Address Registries is refused (those embedding an IPv4
 * address are judged by it, above), and IPv6 outside global unicast 2000::/3 is refused: the
 * IPv6 Address Space registry reserves the rest (or makes it local, link-local or multicast).
 */
const reserved: [string, string][] = [
  ["[3fff::1]", "documentation 3fff::/20 (RFC 9637)"],
  ["[3fff:fff:ffff::1]", "documentation, top of 3fff::/20"],
  ["[5f00::1]", "SRv6 SIDs 5f00::/16 (RFC 9602)"],
  ["[100:0:0:1::1]", "dummy prefix 100:0:0:1::/64 (RFC 9780)"],
  ["[2001:1::1]", "PCP anycast 2001:1::1 (in 2001::/23)"],
  ["[2001:1::3]", "DNS-SD SRP anycast 2001:1::3"],
  ["[2001:2::1]", "benchmarking 2001:2::/48"],
  ["[2001:3::1]", "AMT 2001:3::/32"],
  ["[2001:4:112::1]", "AS112-v6 2001:4:112::/48"],
  ["[2001:10::1]", "ORCHID 2001:10::/28 (deprecated)"],
  ["[2001:20::1]", "ORCHIDv2 2001:20::/28"],
  ["[2001:30::1]", "drone remote ID DETs 2001:30::/28"],
  ["[2001:1ff::1]", "top of the IETF protocol assignments 2001::/23"],
  ["[2620:4f:8000::1]", "AS112 direct delegation 2620:4f:8000::/48"],
  ["[4000::1]", "reserved by IETF 4000::/3"],
  ["[1000::1]", "reserved by IETF 1000::/4"],
  ["[e000::1]", "reserved by IETF e000::/4"],
  ["[fe00::1]", "reserved by IETF fe00::/9"],
  ["[200::1]", "reserved (formerly OSI NSAP) 0200::/7"],
  ["192.31.196.1", "AS112-v4 192.31.196.0/24"],
  ["192.52.193.1", "AMT 192.52.193.0/24"],
  ["192.88.99.1", "deprecated 6to4 relay anycast 192.88.99.0/24"],
  ["192.175.48.1", "AS112 direct delegation 192.175.48.0/24"],
  ["192.0.0.9", "PCP anycast (in 192.0.0.0/24)"],
  ["100.64.0.1", "shared address space 100.64.0.0/10"],
  ["100.127.255.254", "top of shared address space"],
  ["0.1.2.3", "this network 0.0.0.0/8"],
  ["224.0.0.1", "multicast"],
  ["240.0.0.1", "reserved 240.0.0.0/4"],
];

/** Just outside those ranges: ordinary public addresses. */
const nextToReserved = [
  "[3fff:1000::1]",
  "[2001:200::1]",
  "[2620:4f:8001::1]",
  "[2c0f:f248::1]",
  "192.31.197.1",
  "192.52.192.1",
  "192.175.49.1",
  "100.128.0.1",
];

const allowed = [
  "example.com",
  "example.com.", // one trailing dot is the same public name
  "8.8.8.8",
  "[2606:4700::1111]",
  "[::ffff:8.8.8.8]", // IPv4-mapped public
  "[64:ff9b::808:808]", // NAT64 to a public address
  "[2002:808:808::1]", // 6to4 of a public address
  "[2a00:1450:4001::200e]",
];

describe("callback URLs: IPv6 forms and trailing dots (SSRF)", () => {
  it.each(refused)("refuses %s (%s)", (h) => {
    expect(callbackUrlProblem(host(h), false)).not.toBeNull();
  });
  it.each(allowed)("allows %s", (h) => {
    expect(callbackUrlProblem(host(h), false)).toBeNull();
  });
});

describe("callback URLs: every IANA special-purpose range (SSRF)", () => {
  it.each(reserved)("refuses %s (%s)", (h) => {
    expect(callbackUrlProblem(host(h), false)).not.toBeNull();
  });
  it.each(nextToReserved)("allows %s", (h) => {
    expect(callbackUrlProblem(host(h), false)).toBeNull();
  });
});
