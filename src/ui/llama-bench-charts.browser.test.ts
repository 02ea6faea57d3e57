/**
 * The llama-bench sweep chart's text stays readable on a phone: the SVG scales with its box (viewBox 400
 * wide), so at 390 px of screen a 12-unit tick used to be drawn ≈ 10 px; it is now at least 12 px on screen
 * at any width, and no smaller than before on a wide one.
 */
import { expect, it } from 'vitest';
import './app.css';
import './llama-bench.css';
import type { LlamaBenchTest } from '../bench/llama-bench.ts';
import { depthChart } from './llama-bench-charts.ts';

const test = (name: string, depth: number, pp: boolean, tps: number) =>
  ({
    name,
    depth,
    nPrompt: pp ? 512 : 0,
    nGen: pp ? 0 : 128,
    tokensPerSecond: { mean: tps },
  }) as LlamaBenchTest;

/** The smallest on-screen font size (px) of the chart's tick and axis-label text, once laid out. */
async function smallestText(width: number): Promise<number> {
  const box = document.createElement('div');
  box.style.width = `${width}px`;
  box.append(
    depthChart(
      [test('pp512', 0, true, 1200), test('tg128', 0, false, 95), test('pp512 @ d1024', 1024, true, 900)],
      2048,
    ),
  );
  document.body.replaceChildren(box);
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  const svg = box.querySelector('svg') as SVGSVGElement;
  const scale = svg.getBoundingClientRect().width / 400;
  const texts = [...svg.querySelectorAll<SVGTextElement>('.lb-tick, .lb-label')];
  expect(texts.length).toBeGreaterThan(5);
  return Math.min(...texts.map((t) => Number.parseFloat(getComputedStyle(t).fontSize) * scale));
}

it('draws the sweep chart’s ticks and labels at ≥ 12 px on screen, from a phone’s width to a desktop’s', async () => {
  // 330 px: the chart's width in a card on a 390 px screen.
  expect(await smallestText(330)).toBeGreaterThanOrEqual(11.9);
  expect(await smallestText(250)).toBeGreaterThanOrEqual(11.9);
  // Wide: the text scales up with the chart as before (12 units × 1.5).
  expect(await smallestText(600)).toBeCloseTo(18, 0);
});
