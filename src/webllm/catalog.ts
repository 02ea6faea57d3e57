/**
 * WebLLM's model catalogue (`prebuiltAppConfig.model_list`, or a self-hosted app config) filtered for one
 * adapter, and the URL handling for self-hosted models. Pure functions: no DOM, no GPU, no network.
 */

import type { AppConfig, ModelRecord } from '@mlc-ai/web-llm';
import { EngineError } from '../core/errors.ts';
import { fmtBinaryBytes } from '../util/format.ts';

/** What the filter needs to know about an adapter (a GPUAdapter's features and limits, or a fake). */
export interface AdapterFacts {
  features: Iterable<string>;
  limits: { maxBufferSize?: number; maxStorageBufferBindingSize?: number };
  /**
   * GPU memory the page may use, in MB, when known (WebGPU does not say; from a memory probe or the user).
   * Without it, `vram_required_MB` is shown but not enforced.
   */
  memoryMB?: number;
}

/** One catalogue entry as the page shows it. */
export interface CatalogEntry {
  id: string;
  record: ModelRecord;
  /** Offered on this adapter. */
  ok: boolean;
  /** Why not, when `ok` is false (a sentence a person can act on). */
  reasons: string[];
  /** Features the model needs: its record's `required_features`, plus `shader-f16` for f16 ids. */
  requiredFeatures: string[];
  vramMB?: number;
  /**
   * Download size in bytes where known. WebLLM's records do not carry it (it is in each model's
   * `tensor-cache.json`), so this is undefined for the prebuilt catalogue.
   */
  downloadBytes?: number;
  /** Set by the page after asking the cache (`hasModelInCache`). */
  cached?: boolean;
}

/** Model ids whose weights or kernels are f16 need `shader-f16` even when the record omits it. */
export function needsShaderF16(modelId: string): boolean {
  return /(^|[-_])q\d+f16(_\d+)?($|[-_])/i.test(modelId);
}

/** Features a record needs on this adapter. */
export function requiredFeaturesOf(record: ModelRecord): string[] {
  const out = new Set(record.required_features ?? []);
  if (needsShaderF16(record.model_id)) out.add('shader-f16');
  return [...out];
}

const MB = 1024 * 1024;

/** One record against one adapter. */
export function checkRecord(record: ModelRecord, adapter: AdapterFacts): CatalogEntry {
  const features = new Set(adapter.features);
  const requiredFeatures = requiredFeaturesOf(record);
  const reasons: string[] = [];
  for (const f of requiredFeatures)
    if (!features.has(f))
      reasons.push(
        f === 'shader-f16'
          ? 'needs shader-f16 (f16 model), which this adapter does not offer'
          : `needs the WebGPU feature ${f}, which this adapter does not offer`,
      );
  const need = record.buffer_size_required_bytes;
  if (need !== undefined) {
    const max = Math.min(
      adapter.limits.maxBufferSize ?? Number.POSITIVE_INFINITY,
      adapter.limits.maxStorageBufferBindingSize ?? Number.POSITIVE_INFINITY,
    );
    if (need > max)
      reasons.push(
        `needs GPU buffers of ${fmtBinaryBytes(need)}; this adapter allows ${fmtBinaryBytes(max)} per buffer`,
      );
  }
  const vramMB = record.vram_required_MB;
  if (vramMB !== undefined && adapter.memoryMB !== undefined && vramMB > adapter.memoryMB)
    reasons.push(
      `needs about ${fmtBinaryBytes(vramMB * MB)} of GPU memory; about ${fmtBinaryBytes(adapter.memoryMB * MB)} is available`,
    );
  return { id: record.model_id, record, ok: reasons.length === 0, reasons, requiredFeatures, vramMB };
}

/** The catalogue for an adapter: every record, offered ones first (then by GPU memory), with reasons. */
export function filterCatalog(appConfig: AppConfig, adapter: AdapterFacts): CatalogEntry[] {
  const entries = appConfig.model_list
    .filter((r) => r.model_type === undefined || r.model_type === 0) // LLMs only (not embedding/VLM)
    .map((r) => checkRecord(r, adapter));
  return entries.sort(
    (a, b) => Number(b.ok) - Number(a.ok) || (a.vramMB ?? Infinity) - (b.vramMB ?? Infinity),
  );
}

/** Resolves `url` against `base` to an absolute http(s) URL. @throws EngineError('invalid_argument') */
export function absoluteUrl(url: string, base: string): string {
  let u: URL;
  try {
    u = new URL(url, base);
  } catch {
    throw new EngineError('invalid_argument', `"${url}" is not a URL (base ${base})`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new EngineError('invalid_argument', `a WebLLM model URL must be http or https, got ${u.href}`);
  return u.href;
}

/**
 * A record for a self-hosted model: weights at `${baseUrl}/${modelId}/` and the library at
 * `${baseUrl}/${libFile}`, both resolved to absolute URLs (WebLLM rejects relative weight URLs).
 * `baseUrl` may be relative to `pageUrl` (e.g. `/models/`).
 */
export function selfHostedRecord(
  template: ModelRecord,
  baseUrl: string,
  pageUrl: string,
  opts: { modelPath?: string; modelLib?: string } = {},
): ModelRecord {
  const base = absoluteUrl(baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`, pageUrl);
  const libFile = opts.modelLib ?? template.model_lib.split('/').pop() ?? '';
  const model = absoluteUrl(opts.modelPath ?? `${template.model_id}/`, base);
  return { ...template, model, model_lib: absoluteUrl(libFile, base) };
}

/** Every relative `model`/`model_lib` URL in an app config made absolute against `pageUrl`. */
export function resolveAppConfig(appConfig: AppConfig, pageUrl: string): AppConfig {
  return {
    ...appConfig,
    model_list: appConfig.model_list.map((r) => ({
      ...r,
      model: absoluteUrl(r.model, pageUrl),
      model_lib: absoluteUrl(r.model_lib, pageUrl),
    })),
  };
}
