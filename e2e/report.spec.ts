/**
 * The GPU report page in real Chromium. Expected values are read from the adapter in the page itself
 * (`readAdapter`), independently of the page's own code, never hard-coded.
 *
 * Screenshots go to `$SCREENSHOT_DIR` (e.g. `/tmp`) when set, else to the test's output folder.
 */
import { expect, type Page, test } from '@playwright/test';
import { chromium } from 'playwright-core';
import { deviceFingerprint } from '../src/bench/fingerprint.ts';
import { type AdapterSnapshot, formatLimit, REPORT_LIMITS } from '../src/bench/gpu-report.ts';
import { chromiumArgs, resolveChromium } from '../src/cli/browser.ts';
import { stories260kPath } from '../src/testing/models.ts';
import { WANTED_FEATURES } from '../src/webgpu/device.ts';

/** What `navigator.gpu` says in this page, read directly (not through the page's code). */
async function readAdapter(page: Page): Promise<AdapterSnapshot | null> {
  return page.evaluate(async () => {
    const adapter = await navigator.gpu?.requestAdapter({ powerPreference: 'high-performance' });
    if (!adapter) return null;
    const limits: Record<string, number> = {};
    const proto = Object.getPrototypeOf(adapter.limits);
    for (const k of Object.keys(proto)) limits[k] = (adapter.limits as unknown as Record<string, number>)[k];
    const info = adapter.info as GPUAdapterInfo & { isFallbackAdapter?: boolean };
    return {
      vendor: info.vendor,
      architecture: info.architecture,
      device: info.device,
      description: info.description,
      isFallbackAdapter: Boolean(info.isFallbackAdapter),
      features: [...adapter.features].sort(),
      limits,
    };
  });
}

/** Waits until the page has finished probing and returns its status. */
async function gpuStatus(page: Page): Promise<string | null> {
  const root = page.locator('#gpu-report');
  await expect(root).not.toHaveAttribute('data-gpu-status', 'pending');
  return root.getAttribute('data-gpu-status');
}

test('shows the adapter, its LLM features and limits, and says when it is software', async ({ page }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto('/#gpu');
  await expect(page).toHaveTitle('WebGPU LLM Bench');
  await expect(page.getByRole('banner')).toContainText('WebGPU LLM Bench');
  await expect(page.getByRole('heading', { level: 1, name: 'Your GPU' })).toBeVisible();
  expect(await gpuStatus(page)).toBe('ok');

  const real = await readAdapter(page);
  if (!real)
    throw new Error('this Chromium should give a WebGPU adapter (navigator.gpu.requestAdapter() gave none)');
  const software =
    real.isFallbackAdapter ||
    /swiftshader/i.test(`${real.vendor} ${real.architecture} ${real.device} ${real.description}`);
  if (process.env.WEBGPU_GPU !== '1') {
    expect(software, 'without GPU flags Chromium gives the SwiftShader fallback adapter').toBe(true);
  }

  const adapter = page.getByRole('region', { name: 'Adapter', exact: true });
  await expect(adapter.locator('[data-field="vendor"]')).toHaveText(real.vendor || 'not reported');
  await expect(adapter.locator('[data-field="architecture"]')).toHaveText(
    real.architecture || 'not reported',
  );
  await expect(adapter.locator('[data-field="isFallbackAdapter"]')).toHaveText(
    real.isFallbackAdapter ? /^Yes/ : /^No/,
  );

  const status = page.getByRole('list', { name: 'Status' });
  await expect(status.locator('[data-badge="webgpu"]')).toHaveText(/WebGPU available/);
  const readings = page.getByRole('region', { name: 'What this means' });
  if (software) {
    await expect(status.locator('[data-badge="software"]')).toHaveText(/Software adapter/);
    await expect(readings).toContainText('Software adapter: numbers will not reflect a GPU.');
  } else {
    await expect(status.locator('[data-badge="hardware"]')).toHaveText(/Hardware adapter/);
  }

  const features = page.getByRole('region', { name: 'Features for LLMs' });
  for (const f of WANTED_FEATURES) {
    const present = real.features.includes(f);
    const item = features.locator(`[data-feature="${f}"]`);
    await expect(item).toHaveAttribute('data-present', String(present));
    await expect(item).toContainText(present ? 'Available' : 'Missing');
    await expect(status.locator(`[data-badge="${f}"]`)).toHaveText(
      new RegExp(`${f}${present ? '' : ' missing'}$`),
    );
  }
  const noF16 = readings.getByText(/^No shader-f16: /);
  await expect(noF16).toHaveCount(real.features.includes('shader-f16') ? 0 : 1);

  const table = page.getByRole('table');
  for (const { name, unit } of REPORT_LIMITS) {
    const value = real.limits[name];
    expect(value, `adapter.limits.${name}`).toBeGreaterThan(0);
    const row = table.locator(`[data-limit="${name}"]`);
    await expect(row).toHaveAttribute('data-value', String(value));
    await expect(row.locator('.limits__shown')).toHaveText(formatLimit(unit, value));
    if (unit === 'bytes')
      await expect(row.locator('.limits__shown')).toHaveText(/^~?\d+(\.\d+)? (B|KiB|MiB|GiB|TiB)$/);
    const exact = row.locator('.limits__exact');
    if (unit === 'bytes') await expect(exact).toHaveText(`${value.toLocaleString('en-US')} bytes`);
    else await expect(exact).toHaveCount(0);
  }
  await expect(readings).toContainText(
    `maxStorageBufferBindingSize ${formatLimit('bytes', real.limits.maxStorageBufferBindingSize)}: ` +
      'tensors larger than this are split across bindings.',
  );
  await expect(page.getByText(`${real.features.length} features and`)).toBeVisible();
  expect(errors).toEqual([]);
});

test('the fingerprint is the adapter’s and stays the same on reload', async ({ page, browser }) => {
  await page.goto('/#gpu');
  expect(await gpuStatus(page)).toBe('ok');
  const id = page.getByTestId('fingerprint-id');
  const first = await id.textContent();
  expect(first).toMatch(/^[0-9a-f]{16}$/);

  const real = await readAdapter(page);
  if (!real) throw new Error('no adapter');
  expect(first).toBe(deviceFingerprint(real).id);
  await expect(page.getByTestId('fingerprint-label')).toHaveText(deviceFingerprint(real).label);

  await page.reload();
  expect(await gpuStatus(page)).toBe('ok');
  await expect(id).toHaveText(first ?? '');

  const context = await browser.newContext();
  const other = await context.newPage();
  await other.goto('/#gpu');
  expect(await gpuStatus(other)).toBe('ok');
  await expect(other.getByTestId('fingerprint-id')).toHaveText(first ?? '');
  await context.close();
});

test('with --disable-webgpu, navigator.gpu stays but gives no adapter, and the page says so', async ({
  baseURL,
}) => {
  const browser = await chromium.launch({
    executablePath: resolveChromium().path,
    args: chromiumArgs({ disableWebGPU: true }),
  });
  try {
    const page = await browser.newPage();
    await page.goto(`${baseURL ?? ''}/#gpu`);
    // What this Chromium really does with --disable-webgpu: the API object is still exposed, and
    // requestAdapter() resolves to null. If a future Chromium removes navigator.gpu instead, this fails here.
    const raw = await page.evaluate(async () => ({
      secure: window.isSecureContext,
      hasGpu: 'gpu' in navigator && Boolean(navigator.gpu),
      adapter: navigator.gpu ? (await navigator.gpu.requestAdapter()) !== null : null,
    }));
    expect(raw).toEqual({ secure: true, hasGpu: true, adapter: false });

    expect(await gpuStatus(page)).toBe('no-adapter');
    const problem = page.getByRole('alert');
    await expect(problem).toHaveAttribute('data-problem', 'no-adapter');
    await expect(problem.getByRole('heading', { level: 2 })).toHaveText(
      'WebGPU is present but gave no adapter',
    );
    await expect(problem).toContainText('requestAdapter() returned no adapter');
    await expect(problem.getByRole('listitem').first()).toContainText('chrome://gpu');
    await expect(page.locator('[data-badge="webgpu"]')).toHaveText(/WebGPU unavailable/);
    await expect(page.getByTestId('fingerprint-id')).toHaveCount(0);
  } finally {
    await browser.close();
  }
});

test('over plain http from a non-local host, the page says WebGPU needs a secure context', async ({
  page,
  baseURL,
}) => {
  // Serve the built app as http://insecure.test, which the browser treats as an insecure origin.
  await page.route('http://insecure.test/**', async (route) => {
    const url = new URL(route.request().url());
    const response = await route.fetch({ url: new URL(url.pathname + url.search, baseURL).href });
    await route.fulfill({ response });
  });
  await page.goto('http://insecure.test/#gpu');
  expect(await page.evaluate(() => [window.isSecureContext, 'gpu' in navigator])).toEqual([false, false]);
  expect(await gpuStatus(page)).toBe('no-webgpu');
  const problem = page.getByRole('alert');
  await expect(problem.getByRole('heading', { level: 2 })).toHaveText('WebGPU needs a secure context');
  await expect(problem).toContainText('https');
  await expect(problem).toContainText('localhost');
});

test('when the device request fails, the page says so and still shows the adapter', async ({ page }) => {
  await page.addInitScript(() => {
    GPUAdapter.prototype.requestDevice = () =>
      Promise.reject(new DOMException('simulated device failure', 'OperationError'));
  });
  await page.goto('/#gpu');
  expect(await gpuStatus(page)).toBe('device-failed');
  const problem = page.getByRole('alert');
  await expect(problem.getByRole('heading', { level: 2 })).toHaveText('The GPU device request failed');
  await expect(problem).toContainText('OperationError: simulated device failure');
  await expect(page.getByRole('region', { name: 'Adapter', exact: true })).toBeVisible();
  await expect(page.locator('[data-badge="webgpu"]')).toHaveText(/WebGPU unavailable/);
});

test('reads well at 1280×800 and at phone width (screenshots)', async ({ browser }, testInfo) => {
  const dir = process.env.SCREENSHOT_DIR;
  const out = (name: string) => (dir ? `${dir}/${name}` : testInfo.outputPath(name));
  const sizes = [
    { file: 'report-desktop.png', viewport: { width: 1280, height: 800 }, isMobile: false },
    { file: 'report-phone.png', viewport: { width: 390, height: 844 }, isMobile: true },
  ];
  for (const { file, viewport, isMobile } of sizes) {
    const context = await browser.newContext({ viewport, isMobile, hasTouch: isMobile });
    const page = await context.newPage();
    await page.goto('/#gpu');
    expect(await gpuStatus(page)).toBe('ok');
    // Nothing wider than the screen: no sideways scrolling of the whole page.
    const widths = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
    expect(widths[0], `page width at ${viewport.width}px`).toBeLessThanOrEqual(widths[1]);
    await page.screenshot({ path: out(file), fullPage: true });
    await context.close();
  }
});

test('after a load, "Kernels of the loaded model" says which kernels run and why not subgroup matrices (screenshots)', async ({
  browser,
}, testInfo) => {
  test.setTimeout(180_000);
  const dir = process.env.SCREENSHOT_DIR;
  const out = (name: string) => (dir ? `${dir}/${name}` : testInfo.outputPath(name));
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto('/#gpu');
  await expect(page.locator('body')).toHaveAttribute('data-app', 'ready');
  const card = page.getByRole('region', { name: 'Kernels of the loaded model' });
  await expect(card).toContainText('Load a model with our engine');
  await expect(page.locator('#gpu-kernels')).toHaveAttribute('data-kernels', 'none');

  await page.getByRole('tab', { name: 'Benchmark' }).click();
  await page.locator('#model-file').setInputFiles(stories260kPath());
  await expect(page.getByTestId('load-status')).toHaveText(/^Loaded stories260K in /, { timeout: 90_000 });
  await page.getByRole('tab', { name: 'GPU' }).click();
  await expect(page.locator('#gpu-kernels')).toHaveAttribute('data-kernels', 'ours');
  const list = card.getByRole('list', { name: 'Kernels' });
  await expect(card).toContainText('stories260K: what this load chose on this adapter');
  const texts = await list.locator('.reading__text').allTextContents();
  expect(texts.find((t) => t.startsWith('Prefill matmuls:'))).toBeDefined();
  expect(texts.find((t) => t.startsWith('Decode matmuls:'))).toBeDefined();
  // The token pick: stories260K's 512 logits are one stripe, so the sampler plans its draw alone.
  expect(texts).toContain(
    'Greedy pick: the argmax over 512 logits in two passes, one stripe of 1,024 logits (64 threads per workgroup), then one workgroup over its partial maximum.',
  );
  expect(texts).toContain('GPU sampler: one 128-thread workgroup draws.');
  const attention = texts.find((t) => t.startsWith('Prefill attention:'));
  if (process.env.WEBGPU_GPU !== '1') {
    // SwiftShader offers no subgroup matrices: the engine's recorded reason is on the page.
    expect(attention).toMatch(/subgroup matrices not chosen: no subgroup matrices: /);
  } else {
    expect(attention).toMatch(/subgroup matrices (chosen|not chosen: .+)/);
  }
  for (const { file, viewport } of [
    { file: 'report-kernels-desktop.png', viewport: { width: 1280, height: 800 } },
    { file: 'report-kernels-phone.png', viewport: { width: 390, height: 844 } },
  ]) {
    await page.setViewportSize(viewport);
    const widths = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
    expect(widths[0], `page width at ${viewport.width}px`).toBeLessThanOrEqual(widths[1]);
    await card.scrollIntoViewIfNeeded();
    await page.screenshot({ path: out(file), fullPage: true });
    await card.screenshot({ path: out(file.replace('.png', '-card.png')) });
  }
  expect(errors).toEqual([]);
  await context.close();
});
