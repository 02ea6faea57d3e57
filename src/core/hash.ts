/**
 * A small non-cryptographic hash shared by the device fingerprint (src/bench/fingerprint.ts) and the model
 * library's cache keys (src/library/store.ts). FNV-1a: Fowler, Noll, Vo, http://www.isthe.com/chongo/tech/comp/fnv/.
 */

const FNV_OFFSET = 0xcbf29ce484222325n;
const FNV_PRIME = 0x100000001b3n;
const MASK64 = 0xffffffffffffffffn;

/** 64-bit FNV-1a of a string's UTF-8 bytes, as 16 hex digits. */
export function fnv1a64(text: string): string {
  let h = FNV_OFFSET;
  for (const byte of new TextEncoder().encode(text)) {
    h ^= BigInt(byte);
    h = (h * FNV_PRIME) & MASK64;
  }
  return h.toString(16).padStart(16, '0');
}
