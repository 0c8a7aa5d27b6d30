"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.toBase64 = toBase64;
exports.fromBase64 = fromBase64;
/** Base64 with only btoa/atob, which Node, workerd and browsers all have (no Buffer). */
const SLICE = 0x8000;
function toBase64(bytes) {
    let out = "";
    for (let at = 0; at < bytes.length; at += SLICE * 3) {
        // Slices of a multiple of 3 bytes encode without inner padding, so they concatenate.
        let bin = "";
        const part = bytes.subarray(at, at + SLICE * 3);
        for (let i = 0; i < part.length; i += SLICE)
            bin += String.fromCharCode(...part.subarray(i, i + SLICE));
        out += btoa(bin);
    }
    return out;
}
function fromBase64(text) {
    const bin = atob(text);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++)
        out[i] = bin.charCodeAt(i);
    return out;
}
