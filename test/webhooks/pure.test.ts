import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { callbackUrlProblem } from "../../src/webhooks/callback-url";
import { parsePointer, resolvePointer } from "../../src/webhooks/pointer";
import { sign, verify } from "../../src/webhooks/signature";

const FC = { seed: 7, numRuns: 200 };
const enc = (s: string) => new TextEncoder().encode(s);

describe("JSON pointer (RFC 6901)", () => {
  const doc = { foo: ["bar", "baz"], "": 0, "a/b": 1, "c%d": 2, "e^f": 3, "g|h": 4, "i\\j": 5, 'k"l': 6, " ": 7, "m~n": 8 };
  it.each([
    ["", doc],
    ["/foo", ["bar", "baz"]],
    ["/foo/0", "bar"],
    ["/", 0],
    ["/a~1b", 1],
    ["/c%d", 2],
    ["/e^f", 3],
    ["/g|h", 4],
    ["/i\\j", 5],
    ['/k"l', 6],
    ["/ ", 7],
    ["/m~0n", 8],
  ])("the RFC's examples: %j", (p, expected) => {
    expect(resolvePointer(doc, parsePointer(p)!)).toEqual(expected);
  });

  it("missing steps, bad indexes and inherited keys resolve to undefined", () => {
    for (const p of ["/foo/2", "/foo/01", "/foo/-", "/nope", "/foo/0/x", "/constructor", "/__proto__"]) {
      expect(resolvePointer(doc, parsePointer(p)!)).toBeUndefined();
    }
  });

  it("rejects strings that are not pointers", () => {
    for (const p of ["foo", "/a~", "/a~2", "~1"]) expect(parsePointer(p)).toBeNull();
  });

  it("any key, escaped, resolves to its value", () => {
    fc.assert(
      fc.property(fc.string(), fc.jsonValue(), (key, value) => {
        const pointer = "/" + key.replaceAll("~", "~0").replaceAll("/", "~1");
        expect(resolvePointer({ [key]: value }, parsePointer(pointer)!)).toEqual(value);
      }),
      FC,
    );
  });
});

describe("signatures", () => {
  it("a signature verifies for its secret, timestamp and bytes, and for nothing else", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string({ minLength: 1 }),
        fc.integer({ min: 0, max: 2 ** 40 }),
        fc.string(),
        fc.string({ minLength: 1, maxLength: 4 }),
        async (secret, ts, body, extra) => {
          const sig = await sign(secret, String(ts), body);
          expect(sig).toMatch(/^sha256=[0-9a-f]{64}$/);
          expect(await verify(secret, String(ts), enc(body), sig)).toBe(true);
          expect(await verify(secret, String(ts), enc(body), sig.toUpperCase().replace("SHA256=", "sha256="))).toBe(true);
          expect(await verify(secret + extra, String(ts), enc(body), sig)).toBe(false);
          expect(await verify(secret, String(ts + 1), enc(body), sig)).toBe(false);
          expect(await verify(secret, String(ts), enc(body + extra), sig)).toBe(false);
        },
      ),
      { seed: 7, numRuns: 50 },
    );
  });

  it("matches an independent HMAC-SHA256 over '<timestamp>.<body>'", async () => {
    const key = await crypto.subtle.importKey("raw", enc("k"), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, enc('1700000000.{"a":1}')));
    const hex = Array.from(mac, (b) => b.toString(16).padStart(2, "0")).join("");
    expect(await sign("k", "1700000000", '{"a":1}')).toBe(`sha256=${hex}`);
  });

  it("malformed headers are simply invalid", async () => {
    for (const h of [undefined, "", "sha256=", "sha256=abc", `sha1=${"0".repeat(64)}`, `sha256=${"g".repeat(64)}`]) {
      expect(await verify("k", "1", enc("x"), h)).toBe(false);
    }
  });
});

describe("callback URL rules", () => {
  const refused = [
    "http://example.com/hook",
    "ftp://example.com/hook",
    "https://user:pw@example.com/hook",
    "https://localhost/hook",
    "https://LOCALHOST./hook",
    "https://api.localhost/hook",
    "https://127.0.0.1/hook",
    "https://127.8.9.10/hook",
    "https://2130706433/hook", // 127.0.0.1 as one number
    "https://0x7f.1/hook",
    "https://10.1.2.3/hook",
    "https://172.16.0.1/hook",
    "https://172.31.255.255/hook",
    "https://192.168.1.1/hook",
    "https://169.254.169.254/latest/meta-data",
    "https://0.0.0.0/hook",
    "https://100.64.0.1/hook",
    "https://[::1]/hook",
    "https://[::]/hook",
    "https://[fc00::1]/hook",
    "https://[fd12:3456::1]/hook",
    "https://[fe80::1]/hook",
    "https://[::ffff:127.0.0.1]/hook",
    "https://[::ffff:10.0.0.1]/hook",
    "not a url",
    "/relative/path",
  ];
  const allowed = [
    "https://example.com/hook",
    "https://hooks.example.com:8443/in?x=1",
    "https://8.8.8.8/hook",
    "https://172.32.0.1/hook",
    "https://172.15.0.1/hook",
    "https://192.169.0.1/hook",
    "https://[2606:4700::1111]/hook",
    "https://[::ffff:8.8.8.8]/hook",
  ];
  it.each(refused)("refuses %s in production", (url) => {
    expect(callbackUrlProblem(url, false)).not.toBeNull();
  });
  it.each(allowed)("allows %s in production", (url) => {
    expect(callbackUrlProblem(url, false)).toBeNull();
  });
  it("local dev (ALLOW_PRIVATE_CALLBACKS=1) allows http and private targets, still not other schemes or credentials", () => {
    expect(callbackUrlProblem("http://localhost:8787/hook", true)).toBeNull();
    expect(callbackUrlProblem("http://10.0.0.5/hook", true)).toBeNull();
    expect(callbackUrlProblem("ftp://localhost/hook", true)).not.toBeNull();
    expect(callbackUrlProblem("http://a:b@localhost/hook", true)).not.toBeNull();
  });
});
