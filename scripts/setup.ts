/**
 * `npm run setup`, step two (scripts/setup.mjs ran `npm ci` when needed): finds, or installs where it can,
 * what the benchmark and the tests need besides npm packages, and ends with a report: what it found, what
 * it installed, what is still missing with the exact command for it. Idempotent; fast when nothing is
 * missing (no apt-get, no download).
 *
 * - Chromium with WebGPU, in the order the tools look (src/cli/browser.ts: `CHROMIUM_PATH`, Playwright's,
 *   `/usr/bin/chromium`), checked by asking it for a WebGPU adapter; missing on Debian as root:
 *   `apt-get install chromium`.
 * - The Vulkan loader `libvulkan.so.1` (Linux; the Node runtime, `webgpu` package): `apt-get install libvulkan1`.
 * - The test model stories260K.gguf where src/testing/models.ts looks ($STORIES260K, models/,
 *   ../shared/models/); missing: downloaded from its public source into models/, SHA-256 checked.
 *
 * `--check`: report only, install and download nothing. Exit status 1 when the benchmark cannot run
 * (npm packages or Chromium missing), else 0 (what the tests still need is in the report).
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join, relative } from 'node:path';
import { chromium } from 'playwright-core';
import { BrowserNotFoundError, chromiumArgs, resolveChromium } from '../src/cli/browser.ts';
import { findVulkanLoader } from '../src/cli/node-gpu.ts';
import {
  findStories260K,
  REPO_ROOT,
  STORIES260K_BYTES,
  STORIES260K_SHA256,
  STORIES260K_URLS,
  stories260kPlaces,
} from '../src/testing/models.ts';

type Status = 'found' | 'installed' | 'missing';
interface Item {
  name: string;
  status: Status;
  detail: string;
  /** The command (or step) that gets a missing item. */
  fix?: string;
  /** Needed by `npm run bench` itself (else by the tests or the Node runtime only). */
  benchNeeds?: boolean;
}

const args = process.argv.slice(2);
if (args.includes('--help')) {
  console.log(
    'usage: npm run setup [-- --check]\n\n' +
      'Installs the npm packages (npm ci) when needed, finds or installs Chromium with WebGPU and the Vulkan\n' +
      'loader (apt-get on Debian as root), fetches the test model stories260K.gguf into models/ when it is\n' +
      'nowhere to be found, and reports what is still missing. --check: report only, change nothing.',
  );
  process.exit(0);
}
const check = args.includes('--check');
const items: Item[] = [];
const rel = (p: string) => (p.startsWith(REPO_ROOT) ? relative(REPO_ROOT, p) || '.' : p);
const say = (s: string) => console.error(`setup: ${s}`);

// 1. npm packages (scripts/setup.mjs did it).
{
  const [status, detail, fix] = (process.env.SETUP_NPM_STEP ?? 'found|node_modules present').split('|');
  items.push({ name: 'npm packages', status: status as Status, detail, fix, benchNeeds: true });
}

// 2. System packages: Chromium and the Vulkan loader.
interface Os {
  id: string;
  like: string;
}
function osRelease(): Os {
  try {
    const t = readFileSync('/etc/os-release', 'utf8');
    const get = (k: string) => (new RegExp(`^${k}="?([^"\\n]*)"?`, 'm').exec(t)?.[1] ?? '').toLowerCase();
    return { id: get('ID'), like: get('ID_LIKE') };
  } catch {
    return { id: '', like: '' };
  }
}
const os = osRelease();
const debian = existsSync('/etc/debian_version') || /debian|ubuntu/.test(`${os.id} ${os.like}`);
const ubuntu = os.id === 'ubuntu' || /ubuntu/.test(os.like);
const root = process.getuid?.() === 0;
const sudo = root ? '' : 'sudo ';

/** The command that installs `what` ('chromium' | 'vulkan') on this system. */
function installCommand(what: 'chromium' | 'vulkan'): string {
  if (what === 'chromium') {
    // Ubuntu's `chromium` is a snap wrapper that does not run headless in containers: use Playwright's.
    if (ubuntu || process.platform !== 'linux') return 'npx playwright install chromium';
    if (debian) return `${sudo}apt-get install -y chromium`;
    if (/fedora|rhel/.test(`${os.id} ${os.like}`)) return `${sudo}dnf install -y chromium`;
    if (/arch/.test(`${os.id} ${os.like}`)) return `${sudo}pacman -S chromium`;
    return 'npx playwright install chromium (or set CHROMIUM_PATH=/path/to/chrome)';
  }
  if (debian) return `${sudo}apt-get install -y libvulkan1`;
  if (/fedora|rhel/.test(`${os.id} ${os.like}`)) return `${sudo}dnf install -y vulkan-loader`;
  if (/arch/.test(`${os.id} ${os.like}`)) return `${sudo}pacman -S vulkan-icd-loader`;
  return "install your distribution's Vulkan loader (libvulkan.so.1)";
}

function findChromium(): { path: string; source: string } | undefined {
  try {
    return resolveChromium();
  } catch (e) {
    if (e instanceof BrowserNotFoundError && !process.env.CHROMIUM_PATH) return undefined;
    throw e;
  }
}

let browser = (() => {
  try {
    return findChromium();
  } catch (e) {
    // CHROMIUM_PATH names no file: say so, install nothing over it.
    items.push({
      name: 'Chromium',
      status: 'missing',
      detail: (e as Error).message,
      fix: 'unset CHROMIUM_PATH, or point it at a Chromium',
      benchNeeds: true,
    });
    return null;
  }
})();
const linux = process.platform === 'linux';
let loader = linux ? findVulkanLoader() : undefined;

const aptNeeds: string[] = [];
if (browser === undefined && debian && !ubuntu) aptNeeds.push('chromium');
if (linux && !loader && debian) aptNeeds.push('libvulkan1');
const installed = new Set<string>();
if (aptNeeds.length && root && !check && existsSync('/usr/bin/apt-get')) {
  say(`installing ${aptNeeds.join(' ')} (apt-get)`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const update = spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  const ok =
    update.status === 0 &&
    spawnSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...aptNeeds], {
      stdio: 'inherit',
      env,
    }).status === 0;
  if (!ok) say(`apt-get install ${aptNeeds.join(' ')} failed (see above)`);
  for (const p of aptNeeds) installed.add(p);
  if (browser === undefined) browser = findChromium();
  if (linux && !loader) loader = findVulkanLoader();
}

/** Asks the Chromium for a WebGPU adapter on a local page (WebGPU needs a secure context: 127.0.0.1). */
async function webgpuAdapter(executablePath: string): Promise<{ ok: boolean; detail: string }> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!doctype html><title>setup</title>');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const b = await chromium.launch({ executablePath, args: chromiumArgs(), headless: true, timeout: 60_000 });
  try {
    const page = await b.newPage();
    await page.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    return await page.evaluate(async () => {
      if (!('gpu' in navigator))
        return { ok: false, detail: 'navigator.gpu is missing (no WebGPU in this build)' };
      const a = await navigator.gpu.requestAdapter();
      if (!a) return { ok: false, detail: 'navigator.gpu.requestAdapter() gave no adapter' };
      const i = a.info;
      const name = [i.vendor, i.architecture, i.description || i.device].filter(Boolean).join(' ');
      const soft =
        i.isFallbackAdapter || /swiftshader/i.test(`${i.vendor} ${i.architecture} ${i.description}`);
      return {
        ok: true,
        detail: `${name || 'an adapter'}${soft ? ' (software: figures measure the CPU)' : ''}`,
      };
    });
  } finally {
    await b.close();
    server.close();
  }
}

/**
 * {@link webgpuAdapter}, remembered per Chromium binary (path, size, mtime) in node_modules/.cache/ so that a
 * second `npm run setup` does not start the browser again; only an adapter found is remembered.
 */
async function cachedWebgpuAdapter(executablePath: string): Promise<{ ok: boolean; detail: string }> {
  const file = join(REPO_ROOT, 'node_modules', '.cache', 'setup-webgpu.json');
  const st = statSync(realpathSync(executablePath));
  const key = `${executablePath}|${st.size}|${st.mtimeMs}`;
  try {
    const c = JSON.parse(readFileSync(file, 'utf8')) as { key: string; detail: string };
    if (c.key === key) return { ok: true, detail: `${c.detail} (checked earlier)` };
  } catch {
    // No record yet.
  }
  const a = await webgpuAdapter(executablePath);
  if (a.ok) {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, JSON.stringify({ key, detail: a.detail }));
  }
  return a;
}

if (browser) {
  const how = installed.has('chromium') ? 'installed' : 'found';
  let adapter: { ok: boolean; detail: string };
  try {
    adapter = await cachedWebgpuAdapter(browser.path);
  } catch (e) {
    adapter = { ok: false, detail: `could not start it: ${(e as Error).message.split('\n')[0]}` };
  }
  items.push({
    name: 'Chromium',
    status: adapter.ok ? how : 'missing',
    detail: `${browser.path} (${browser.source}); WebGPU: ${adapter.detail}`,
    fix: adapter.ok
      ? undefined
      : `a Chromium with WebGPU: ${installCommand('chromium')}, or CHROMIUM_PATH=/path/to/chrome`,
    benchNeeds: true,
  });
} else if (browser === undefined) {
  items.push({
    name: 'Chromium',
    status: 'missing',
    detail: 'no Chromium found (CHROMIUM_PATH, Playwright-managed, /usr/bin/chromium)',
    fix: `${installCommand('chromium')}  (or set CHROMIUM_PATH=/path/to/chrome)`,
    benchNeeds: true,
  });
}

if (linux)
  items.push(
    loader
      ? {
          name: 'Vulkan loader',
          status: installed.has('libvulkan1') ? 'installed' : 'found',
          detail: `${loader} (for --runtime node and the Node tests)`,
        }
      : {
          name: 'Vulkan loader',
          status: 'missing',
          detail: 'libvulkan.so.1 not found (needed by --runtime node and the Node tests)',
          fix: installCommand('vulkan'),
        },
  );

// 3. The test model.
const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
const modelsPath = stories260kPlaces({}).find((p) => p.source === 'models/')?.path as string;
const manual =
  `mkdir -p models && curl -fL -o models/stories260K.gguf ${STORIES260K_URLS[0]} ` +
  `(from a machine with the network; \`npm run setup\` then checks its SHA-256, ${STORIES260K_SHA256}), ` +
  'or set STORIES260K=/path/to/stories260K.gguf';

async function download(): Promise<{ ok: true } | { ok: false; why: string }> {
  const whys: string[] = [];
  for (const url of STORIES260K_URLS) {
    try {
      const r = await fetch(url, { signal: AbortSignal.timeout(60_000) });
      if (!r.ok) {
        whys.push(`${url}: HTTP ${r.status}`);
        continue;
      }
      const b = new Uint8Array(await r.arrayBuffer());
      if (b.length !== STORIES260K_BYTES || sha256(b) !== STORIES260K_SHA256) {
        whys.push(`${url}: ${b.length} bytes with SHA-256 ${sha256(b)}, not the expected file`);
        continue;
      }
      mkdirSync(dirname(modelsPath), { recursive: true });
      writeFileSync(`${modelsPath}.part`, b);
      renameSync(`${modelsPath}.part`, modelsPath);
      return { ok: true };
    } catch (e) {
      const err = e as Error & { cause?: { code?: string; message?: string } };
      whys.push(`${url}: ${err.cause?.code ?? err.cause?.message ?? err.message}`);
    }
  }
  return { ok: false, why: whys.join('; ') };
}

/** ` → TARGET` for a link (models/stories260K.gguf made by an earlier run), else ''. */
const arrow = (p: string) => (lstatSync(p).isSymbolicLink() ? ` → ${realpathSync(p)}` : '');
const model = findStories260K();
if (model) {
  const b = readFileSync(model);
  const good = sha256(b) === STORIES260K_SHA256;
  const where = stories260kPlaces().find((p) => p.path === model)?.source;
  // The README's examples say models/stories260K.gguf: make that path work here too, as a link.
  let link = '';
  if (good && where !== 'models/' && !check && !existsSync(modelsPath)) {
    try {
      mkdirSync(dirname(modelsPath), { recursive: true });
      symlinkSync(relative(dirname(modelsPath), model), modelsPath);
      link = `; linked ${rel(modelsPath)} to it`;
    } catch (e) {
      link = `; could not link ${rel(modelsPath)} to it (${(e as Error).message})`;
    }
  }
  items.push(
    good
      ? {
          name: 'test model',
          status: 'found',
          detail: `${rel(model)}${arrow(model)} (${where}; SHA-256 checked${link})`,
        }
      : {
          name: 'test model',
          status: 'missing',
          detail: `${rel(model)} (${where}) is not stories260K.gguf: SHA-256 ${sha256(b)}, expected ${STORIES260K_SHA256}`,
          fix: `replace it: ${manual}`,
        },
  );
} else if (process.env.STORIES260K) {
  items.push({
    name: 'test model',
    status: 'missing',
    detail: `STORIES260K=${process.env.STORIES260K} does not exist`,
    fix: 'put stories260K.gguf there, or unset STORIES260K (then models/ and ../shared/models/ are used)',
  });
} else if (check) {
  items.push({
    name: 'test model',
    status: 'missing',
    detail: 'stories260K.gguf not found',
    fix: 'npm run setup',
  });
} else {
  say(`downloading the test model stories260K.gguf (1.2 MB) into ${rel(modelsPath)}`);
  const d = await download();
  items.push(
    d.ok
      ? {
          name: 'test model',
          status: 'installed',
          detail: `${rel(modelsPath)} (downloaded, SHA-256 checked)`,
        }
      : { name: 'test model', status: 'missing', detail: `download failed: ${d.why}`, fix: manual },
  );
}

// 4. The report.
const width = Math.max(...items.map((i) => i.name.length));
const lines = items.map((i) => `  ${i.status.padEnd(9)} ${i.name.padEnd(width)}  ${i.detail}`);
const missing = items.filter((i) => i.status === 'missing');
console.log(`\nsetup report (${check ? 'check only' : 'done'}):\n${lines.join('\n')}`);
if (missing.length) {
  console.log('\nstill missing; run:');
  for (const i of missing) console.log(`  ${i.name}: ${i.fix ?? '(see above)'}`);
}
const benchReady = !missing.some((i) => i.benchNeeds);
console.log(
  benchReady
    ? missing.length
      ? '\nnpm run bench can run; npm test needs what is missing.'
      : '\nready: npm run bench (the benchmark), npm test (the tests), npm run dev (the page).'
    : '\nnpm run bench cannot run until the above is installed.',
);
process.exitCode = benchReady ? 0 : 1;
