// Builds ../../src/embedlab/report/plotly-projector.min.js from entry.js (run: npm ci && npm run build).
// The options are plotly.js's own (its esbuild-config.js: iife, global Plotly, es2016, regl aliased to
// @plotly/regl, `global` defined as window), minified as its dist bundles are. Its three esbuild plugins are
// not needed here: no module these traces use imports a .glsl file (the shaders of scatter3d are
// prebundled in stackgl_modules), NODE_DEBUG is read only by stream code these traces do not reach, and
// the one CSS file, maplibre-gl's, is required only when a map trace registers (none does): it loads empty.
import { build } from 'esbuild';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const out = join(here, '..', '..', 'src', 'embedlab', 'report', 'plotly-projector.min.js');
const version = require('plotly.js/package.json').version;

const result = await build({
    entryPoints: [join(here, 'entry.js')],
    format: 'iife',
    globalName: 'Plotly',
    bundle: true,
    minify: true,
    legalComments: 'eof',  // the bundled modules' own licence comments, kept at the end as plotly.js's dist does
    write: false,
    alias: { regl: '@plotly/regl', stream: 'stream-browserify' },
    define: { global: 'window', 'define.amd': 'false', 'process.env.NODE_DEBUG': 'false' },
    loader: { '.css': 'empty' },
    target: 'es2016',
    charset: 'utf8',
    logLevel: 'warning'
});
// The licence notice of plotly.js's own dist bundles (dist/plotly.min.js's header: version, copyright, MIT),
// with the traces this bundle holds named after the version.
const distHeader = readFileSync(require.resolve('plotly.js/dist/plotly.min.js'), 'utf8').split('*/')[0] + '*/\n';
const versionLine = `* plotly.js v${version}`;
if (!distHeader.includes(versionLine + '\n')) throw new Error(`unexpected plotly.js dist header: ${distHeader}`);
const header = distHeader.replace(versionLine,
    `${versionLine} (custom bundle for embedlab's projector: traces scatter, scattergl, scatter3d)`);
const text = header + result.outputFiles[0].text;
writeFileSync(out + '.tmp', text);
renameSync(out + '.tmp', out);  // whole or not at all
console.log(`wrote ${out}: ${text.length.toLocaleString()} characters, plotly.js ${version}`);
