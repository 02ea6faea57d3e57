/**
 * A stable id for a WebGPU adapter, so results and history can be grouped by device.
 *
 * Inputs, in this order (see {@link fingerprintInputs}):
 *  1. a version tag (`webgpu-fp/1`), bumped if the inputs ever change;
 *  2. `adapter.info` vendor, architecture, device and description, trimmed and lower-cased;
 *  3. the fallback flag (`isFallbackAdapter`);
 *  4. which of the engine's features (`WANTED_FEATURES` in src/webgpu/device.ts: `shader-f16`, `subgroups`,
 *     `timestamp-query`) the adapter offers; a change to that list changes ids, so bump the version with it;
 *  5. the values of the limits shown on the page (`maxBufferSize`, `maxStorageBufferBindingSize`,
 *     `maxComputeWorkgroupStorageSize`, `maxComputeInvocationsPerWorkgroup`, `maxComputeWorkgroupSizeX`),
 *     a missing limit written as null.
 *
 * Only the engine's features and these limits go in, not every feature the browser lists: a browser update that
 * adds an unrelated feature (Chromium adds `chromium-experimental-*` ones often) would otherwise give the same
 * GPU a new id. A driver or browser change that alters what the engine can use does change the id.
 *
 * The hash is 64-bit FNV-1a over the UTF-8 of the canonical JSON, written as 16 hex digits. It is not a
 * security hash; it is synchronous and works where `crypto.subtle` does not (insecure contexts, old Node).
 */
import { fnv1a64 } from '../core/hash.ts';
import { WANTED_FEATURES } from '../webgpu/device.ts';
import { type AdapterSnapshot, isSoftwareAdapter, REPORT_LIMITS } from './gpu-report.ts';

/** Bumped whenever the inputs or their encoding change (the id changes with it). */
export const FINGERPRINT_VERSION = 'webgpu-fp/1';

/** A device's id and a label a person recognises. */
export interface DeviceFingerprint {
  /** 16 lower-case hex digits; the same adapter always gives the same id. */
  id: string;
  /** e.g. "NVIDIA GeForce RTX 4090" or "google swiftshader (software)". */
  label: string;
}

const norm = (s: string) => s.trim().toLowerCase();

/** The canonical string that is hashed: a JSON array of the inputs listed at the top of this file. */
export function fingerprintInputs(s: AdapterSnapshot): string {
  return JSON.stringify([
    FINGERPRINT_VERSION,
    norm(s.vendor),
    norm(s.architecture),
    norm(s.device),
    norm(s.description),
    s.isFallbackAdapter,
    WANTED_FEATURES.filter((f) => s.features.includes(f)),
    REPORT_LIMITS.map(({ name }) => [name, s.limits[name] ?? null]),
  ]);
}

/** A label for the adapter: its description, else vendor/architecture/device; "(software)" when it is one. */
export function deviceLabel(s: AdapterSnapshot): string {
  const name =
    s.description.trim() ||
    [s.vendor, s.architecture, s.device]
      .map((x) => x.trim())
      .filter(Boolean)
      .join(' ') ||
    'Unknown adapter';
  return isSoftwareAdapter(s) ? `${name} (software)` : name;
}

/** The adapter's stable id and label (inputs: see the top of this file). */
export function deviceFingerprint(s: AdapterSnapshot): DeviceFingerprint {
  return { id: fnv1a64(fingerprintInputs(s)), label: deviceLabel(s) };
}
