import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { canonicalJson } from "./canonical-json.js";
import type { EvaluationResult } from "./result.js";

// The one definition of how results are signed: the engine and the Action sign with it, the app
// and `probegate verify` check with it. Hashing only: no I/O, no clock.

/** Names a key without revealing it: the first 16 hex digits of its SHA-256. */
export function keyId(key: string | Buffer): string {
  return createHash("sha256").update(key).digest("hex").slice(0, 16);
}

function mac(result: EvaluationResult, key: string | Buffer): Buffer {
  const { signature: _unsigned, ...body } = result;
  return createHmac("sha256", key).update(canonicalJson(body)).digest();
}

/** Signs a result: HMAC-SHA256 over the canonical JSON of everything but the signature. */
export function signResult(result: EvaluationResult, key: string | Buffer): EvaluationResult {
  if (!key || key.length < 16) throw new RangeError("a signing key must be at least 16 bytes");
  return { ...result, signature: { algorithm: "hmac-sha256", keyId: keyId(key), value: mac(result, key).toString("hex") } };
}

/** Whether a result carries a valid signature by `key`; never throws on forged input. */
export function verifyResult(result: EvaluationResult, key: string | Buffer): { ok: true } | { ok: false; why: string } {
  const sig = result.signature;
  if (!sig) return { ok: false, why: "the result is not signed" };
  if (sig.keyId !== keyId(key)) return { ok: false, why: `the result is signed with another key (key id ${sig.keyId}, expected ${keyId(key)})` };
  const want = mac(result, key);
  const got = Buffer.from(sig.value, "hex");
  if (got.length !== want.length || !timingSafeEqual(got, want)) return { ok: false, why: "the signature does not match the result's content" };
  return { ok: true };
}

/**
 * Whether a result carries a valid signature by any of `keys` (the current key first, then the
 * previous ones a rotation keeps for results in flight). The key is picked by the signature's key
 * id, so an unknown key is refused naming the ids that are accepted.
 */
export function verifyResultWithKeys(result: EvaluationResult, keys: ReadonlyArray<string | Buffer>): { ok: true; keyIndex: number } | { ok: false; why: string } {
  const sig = result.signature;
  if (!sig) return { ok: false, why: "the result is not signed" };
  const index = keys.findIndex((k) => keyId(k) === sig.keyId);
  if (index < 0) return { ok: false, why: `the result is signed with another key (key id ${sig.keyId}, expected ${keys.map(keyId).join(" or ")})` };
  const checked = verifyResult(result, keys[index] as string | Buffer);
  return checked.ok ? { ok: true, keyIndex: index } : checked;
}
