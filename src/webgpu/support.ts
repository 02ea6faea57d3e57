/**
 * What the engine runs, read from the one place each list lives: architectures from config.ts's
 * `SUPPORTED_ARCHITECTURES` (what `llamaConfigFromGguf` accepts), weight types from kernels/common.ts's
 * `WEIGHT_TYPES` (what the kernels dequantize). The GPU report, the "What fits" list and the README's
 * "What it runs" (checked by support.test.ts) all take them from here, so adding an architecture or a type
 * in its own file updates them.
 */

import { SUPPORTED_ARCHITECTURES } from '../model/config.ts';
import { WEIGHT_TYPES } from './kernels/common.ts';

/** The architectures (`general.architecture` values) and tensor types the engine runs, in their lists' order. */
export interface EngineSupport {
  architectures: readonly string[];
  weightTypes: readonly string[];
}

/** The engine's {@link EngineSupport}. */
export function engineSupport(): EngineSupport {
  return { architectures: SUPPORTED_ARCHITECTURES, weightTypes: WEIGHT_TYPES };
}

/** `a, b and c` (`a` alone, `a and b` for two). */
export function joinAnd(items: readonly string[]): string {
  if (items.length <= 1) return items.join('');
  return `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

/** One sentence for people: `Runs GGUF models of the llama, qwen2 and qwen3 architectures with F32, … weights.` */
export function engineSupportSentence(s: EngineSupport = engineSupport()): string {
  return `Runs GGUF models of the ${joinAnd(s.architectures)} architecture${s.architectures.length === 1 ? '' : 's'} with ${joinAnd(s.weightTypes)} weights.`;
}
