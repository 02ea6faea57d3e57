/**
 * The form sections of "Choose a model" (src/ui/model-picker.ts): the source radio group, the GGUF file's
 * drop zone, the URL pane, the synthetic model's selects and pane, and the load options of our engine
 * (WebGPU's default limits, the KV cache type). DOM builders only: each takes the controls the picker
 * keeps and reads (inputs, selects) and returns the elements around them; what a choice does is the
 * picker's, given as callbacks.
 */

import {
  SYNTHETIC_FTYPES,
  SYNTHETIC_SHAPES,
  syntheticShapeRunnable,
  syntheticSize,
} from '../bench/synthetic.ts';
import { h } from '../dom/h.ts';
import { GGML_TYPES } from '../gguf/ggml-types.ts';
import type { GgufFile } from '../gguf/types.ts';
import { fmtParams } from '../util/format.ts';
import { field } from './dom.ts';

/** Where a model comes from: one radio button and one pane each. */
export type SourceKind = 'file' | 'url' | 'synthetic' | 'webllm' | 'remote';

/** The sources in the order of their radio buttons (`coming`: shown, disabled). */
export const SOURCES: { kind: SourceKind; label: string; coming?: boolean }[] = [
  { kind: 'file', label: 'GGUF file' },
  { kind: 'url', label: 'GGUF URL' },
  { kind: 'synthetic', label: 'Synthetic demo' },
  { kind: 'webllm', label: 'WebLLM model' },
  { kind: 'remote', label: 'Remote endpoint' },
];

/** The source choice: a radio group styled as segments, `checked` checked; `onChoose` on a change. */
export function sourceRadios(checked: SourceKind, onChoose: (kind: SourceKind) => void): HTMLElement {
  return h(
    'div',
    { class: 'segments', role: 'radiogroup', 'aria-labelledby': 'model-source-label' },
    SOURCES.map(({ kind, label, coming }) => {
      const input = h('input', {
        type: 'radio',
        name: 'model-source',
        id: `model-source-${kind}`,
        value: kind,
        class: 'segments__input',
      });
      input.checked = kind === checked;
      input.disabled = Boolean(coming);
      input.addEventListener('change', () => onChoose(kind));
      return h(
        'span',
        { class: 'segments__item' },
        input,
        h(
          'label',
          { for: input.id, class: 'segments__label' },
          label,
          coming ? h('span', { class: 'segments__soon' }, 'coming') : null,
        ),
      );
    }),
  );
}

/**
 * The file source: a drop zone around the file picker `fileInput` (id `model-file`) and the keep-a-copy
 * box; `onFiles` gets the files dropped on it.
 */
export function fileDropZone(
  fileInput: HTMLInputElement,
  keepFileCopy: HTMLInputElement,
  onFiles: (files: File[]) => void,
): HTMLElement {
  const dropZone = h(
    'div',
    { class: 'drop', 'data-testid': 'drop-zone' },
    h('p', { class: 'drop__text' }, 'Drop a .gguf file here, or'),
    h('label', { for: 'model-file', class: 'button button--primary drop__button' }, 'Choose a GGUF file'),
    fileInput,
    h(
      'p',
      { class: 'field__hint' },
      'The file is read in place from your disk; nothing is uploaded or copied. A split model ' +
        '(…-00001-of-00003.gguf, …): choose or drop all its parts together.',
    ),
    h(
      'label',
      { class: 'check', for: 'model-keep-file-copy' },
      keepFileCopy,
      ' Also keep a copy in this browser, to load it later without the file',
    ),
  );
  dropZone.addEventListener('dragover', (e) => {
    e.preventDefault();
    dropZone.classList.add('drop--over');
  });
  dropZone.addEventListener('dragleave', () => dropZone.classList.remove('drop--over'));
  dropZone.addEventListener('drop', (e) => {
    e.preventDefault();
    dropZone.classList.remove('drop--over');
    onFiles([...(e.dataTransfer?.files ?? [])]);
  });
  return dropZone;
}

/** The URL source's pane: the URL (or hf: spec) field and the keep-a-copy box. */
export function urlPane(urlInput: HTMLInputElement, keepCopy: HTMLInputElement): HTMLElement {
  return h(
    'div',
    { class: 'pane' },
    field(
      'Model URL or Hugging Face file',
      urlInput,
      'A GGUF URL (the server must allow CORS), or hf:OWNER/REPO/FILE.gguf with an optional @REVISION. ' +
        'A split model: give its first part (…-00001-of-0000N.gguf).',
    ),
    h(
      'label',
      { class: 'check', for: 'model-keep-copy' },
      keepCopy,
      ' Keep a copy in this browser: download once (resumable, checked), then load from disk, also offline',
    ),
  );
}

/** The synthetic model's shape select: every shape with its parameters, and whether our engine runs it. */
export function syntheticShapeSelect(): HTMLSelectElement {
  return h(
    'select',
    { id: 'model-synthetic-shape', class: 'input' },
    SYNTHETIC_SHAPES.map((sh) =>
      h(
        'option',
        { value: sh.id },
        `${sh.label} · ${fmtParams(syntheticSize(sh, 'f32').params)} params` +
          (syntheticShapeRunnable(sh) ? '' : ` · ${sh.architecture}: not supported yet`),
      ),
    ),
  );
}

/** The synthetic model's weight type select. */
export function syntheticTypeSelect(): HTMLSelectElement {
  return h(
    'select',
    { id: 'model-synthetic-type', class: 'input' },
    SYNTHETIC_FTYPES.map((f) => h('option', { value: f }, f.toUpperCase())),
  );
}

/**
 * The synthetic source's pane: a real model's shape and file type (`shapeSelect`, `typeSelect`), the line
 * `sizeLine` saying its size, and the notice that its weights are random.
 */
export function syntheticPane(
  shapeSelect: HTMLSelectElement,
  typeSelect: HTMLSelectElement,
  sizeLine: HTMLElement,
): HTMLElement {
  return h(
    'div',
    { class: 'pane' },
    h('div', { class: 'pane__row' }, field('Model shape', shapeSelect), field('Weights', typeSelect)),
    sizeLine,
    h(
      'p',
      { class: 'notice notice--info', 'data-testid': 'synthetic-notice' },
      h('strong', {}, 'Random weights: speed is real, text is noise. '),
      'The real model’s tensor shapes and types, filled with seeded random numbers on your GPU: nothing is ' +
        'downloaded, and every device runs the same model.',
    ),
  );
}

/**
 * The KV cache type select of our engine (`LoadOptions.kvType`): f16 (default), f32, q8_0 or q4_0 (ggml's
 * blocks, 34 and 18 bytes per 32 values, as llama.cpp's -ctk/-ctv).
 */
export function kvTypeSelect(): HTMLSelectElement {
  return h(
    'select',
    { id: 'model-kv-type', class: 'input', 'aria-describedby': 'model-kv-type-hint' },
    h('option', { value: 'f16' }, 'f16 (default)'),
    h('option', { value: 'f32' }, 'f32'),
    h('option', { value: 'q8_0' }, 'q8_0'),
    h('option', { value: 'q4_0' }, 'q4_0'),
  );
}

/**
 * Our engine's load options under the panes: the default-limits box, the KV cache type, labelled, and the
 * context select with the memory line (ui/kv-context.ts `KvContextOptions.element`).
 */
export function loadOptions(
  defaultLimits: HTMLInputElement,
  kvType: HTMLSelectElement,
  context: HTMLElement,
): HTMLElement[] {
  return [
    h(
      'label',
      { class: 'check', for: 'model-default-limits' },
      defaultLimits,
      ' Request only WebGPU’s default limits (128 MiB per binding, 8 storage buffers), as a phone or integrated GPU would grant them (our engine)',
    ),
    h(
      'div',
      { class: 'kv-type' },
      h('label', { for: 'model-kv-type', class: 'kv-type__label' }, 'KV cache'),
      kvType,
      h(
        'span',
        { id: 'model-kv-type-hint', class: 'kv-type__hint' },
        'f16 as llama.cpp keeps it; f32 takes twice the memory and bandwidth; q8_0 and q4_0 about half and a quarter of f16, quantized as each token is written (head size a multiple of 32; our engine)',
      ),
    ),
    context,
  ];
}

/**
 * The tensor types a synthetic model holds, most tensors first, and — where its file type's main type is
 * missing — why: a k-quant (or IQ4_XS) block holds 256 values, so a row whose width is not a multiple of
 * 256 (stories260K's 64) takes llama-quantize's fallback type instead (issue 46: a "Q4_K_M" with no Q4_K).
 * E.g. `tensors Q5_0 ×21, F32 ×11 · no Q4_K: its blocks of 256 values need rows of a multiple of 256; this
 * shape's rows are 64 wide`.
 */
export function syntheticTypesNote(header: GgufFile, ftype: string): string {
  const counts = new Map<string, number>();
  for (const t of header.tensors.values()) counts.set(t.typeName, (counts.get(t.typeName) ?? 0) + 1);
  const types = [...counts].sort((a, b) => b[1] - a[1]);
  const line = `tensors ${types.map(([n, c]) => `${n} ×${c}`).join(', ')}`;
  // The file type's main tensor type: Q4_K_M → Q4_K, Q6_K → Q6_K, IQ4_XS → IQ4_XS.
  const main = ftype.toUpperCase() === 'IQ4_XS' ? 'IQ4_XS' : ftype.toUpperCase().replace(/_[MSL]$/, '');
  if (counts.has(main)) return line;
  const block = GGML_TYPES.find((t) => t.name === main)?.blockSize;
  if (!block || block === 1) return line;
  const widths = [
    ...new Set([...header.tensors.values()].filter((t) => t.shape.length === 2).map((t) => t.shape[0])),
  ]
    .filter((w) => w % block !== 0)
    .sort((a, b) => a - b);
  return `${line} · no ${main}: its blocks of ${block} values need rows of a multiple of ${block}; this shape's rows are ${widths.join(', ')} wide`;
}
