/**
 * The page's files: `index.html`, its script (uPlot and the page's code, bundled and minified by
 * esbuild) and its style, each served under a content-hashed name so a browser caches it for good.
 * Built by scripts/build.mjs into dist/dashboard/; a gateway run from the sources (or a dist/
 * without them) builds them in memory once, at the first request. No CDN: these machines, and
 * many users' sites, have no internet.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

export interface DashboardAsset {
  body: Buffer;
  type: string;
}

export interface DashboardAssets {
  html: string;
  /** By served name (`app-<hash>.js`, `app-<hash>.css`). */
  files: Map<string, DashboardAsset>;
  /** Bytes of the page (HTML, script, style) before compression. */
  bytes: number;
}

/** The built files' folder when this module runs from dist/ (dist/dashboard), else null. */
function builtDir(): string | null {
  for (const rel of ['./dashboard/', '../dist/dashboard/']) {
    const dir = fileURLToPath(new URL(rel, import.meta.url));
    if (import.meta.url.includes('/dist/') && existsSync(dir)) return dir;
  }
  return null;
}

const hashOf = (b: Buffer) => createHash('sha256').update(b).digest('hex').slice(0, 12);

/** The page's HTML with the script and style names in it (an empty icon: no /favicon.ico 404). */
function html(jsName: string, cssName: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>edgeq capacity</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/dashboard/assets/${cssName}">
</head>
<body>
<div id="app">Loading…</div>
<script type="module" src="/dashboard/assets/${jsName}"></script>
</body>
</html>
`;
}

function assemble(js: Buffer, css: Buffer): DashboardAssets {
  const jsName = `app-${hashOf(js)}.js`;
  const cssName = `app-${hashOf(css)}.css`;
  const page = html(jsName, cssName);
  const files = new Map<string, DashboardAsset>([
    [jsName, { body: js, type: 'text/javascript; charset=utf-8' }],
    [cssName, { body: css, type: 'text/css; charset=utf-8' }],
  ]);
  return { html: page, files, bytes: Buffer.byteLength(page) + js.length + css.length };
}

/** Builds the script and style with esbuild (a dev dependency; the shipped dist/ has them built). */
export async function buildDashboardBundle(): Promise<{ js: Buffer; css: Buffer }> {
  const { build } = await import('esbuild');
  const entry = fileURLToPath(new URL('./page/main.ts', import.meta.url));
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    write: false,
    outdir: '/out',
    loader: { '.css': 'css' },
    logLevel: 'warning',
  });
  const js = result.outputFiles.find((f) => f.path.endsWith('.js'));
  const css = result.outputFiles.find((f) => f.path.endsWith('.css'));
  if (!js || !css) throw new Error('the dashboard build gave no script or no style');
  return { js: Buffer.from(js.contents), css: Buffer.from(css.contents) };
}

let cached: Promise<DashboardAssets> | null = null;

/** The page's files: from dist/dashboard when built, else built here once. */
export function dashboardAssets(): Promise<DashboardAssets> {
  cached ??= (async () => {
    const dir = builtDir();
    if (dir) {
      const names = await readdir(dir);
      const js = names.find((n) => n.endsWith('.js'));
      const css = names.find((n) => n.endsWith('.css'));
      if (js && css) return assemble(await readFile(dir + js), await readFile(dir + css));
    }
    const built = await buildDashboardBundle();
    return assemble(built.js, built.css);
  })();
  cached.catch(() => (cached = null));
  return cached;
}
