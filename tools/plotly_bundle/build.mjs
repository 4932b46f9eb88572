// Builds ../../src/embedlab/report/plotly-projector.min.js from entry.js (run: npm ci && npm run build; README.md).
// The options are plotly.js's own (its esbuild-config.js: iife, global Plotly, es2016, regl aliased to
// @plotly/regl, `global` defined as window), minified and without attribute documentation as its dist
// bundles are. Its three esbuild plugins are not needed here (the `buffer` polyfill its build bundles is a
// devDependency of plotly.js, pinned here too): no module these traces use imports a .glsl file (the
// shaders of scatter3d are prebundled in stackgl_modules), NODE_DEBUG is read only by stream code these
// traces do not reach, and the one CSS file, maplibre-gl's, is required only when a map trace registers
// (none does): it loads empty.
import { build } from 'esbuild';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const out = join(here, '..', '..', 'src', 'embedlab', 'report', 'plotly-projector.min.js');
const version = require('plotly.js/package.json').version;

// plotly.js's dist bundles leave out the attributes' documentation (`description`, `requiredOpts`,
// `otherOpts`, `hrName`: text for its schema and docs pages, never read when drawing; its build strips them
// with tasks/compress_attributes.js). The same here, on plotly.js's own sources: each such property of an
// object literal is dropped with its value, which is scanned (strings, comments and brackets) to its end.
const META_KEY = /([{,]\s*)(?:description|requiredOpts|otherOpts|hrName)\s*:/g;
const CLOSE = { '(': ')', '[': ']', '{': '}' };

function stripAttributeMeta(text) {
    let out = '', from = 0, match;
    META_KEY.lastIndex = 0;
    while ((match = META_KEY.exec(text)) !== null) {
        const end = valueEnd(text, match.index + match[0].length);
        out += text.slice(from, match.index + match[1].length);
        from = text[end] === ',' ? end + 1 : end;  // the property's own comma goes with it
        META_KEY.lastIndex = from;
    }
    return out + text.slice(from);
}

// The index of the `,` or closing bracket that ends the value starting at i (outside strings and comments).
function valueEnd(text, i) {
    const open = [];
    for (; i < text.length; i++) {
        const c = text[i];
        if (c === '"' || c === "'" || c === '`') {
            for (i++; text[i] !== c; i++) if (text[i] === '\\') i++;
        } else if (c === '/' && text[i + 1] === '/') {
            i = text.indexOf('\n', i);
        } else if (c === '/' && text[i + 1] === '*') {
            i = text.indexOf('*/', i) + 1;
        } else if (CLOSE[c]) {
            open.push(CLOSE[c]);
        } else if (c === ')' || c === ']' || c === '}') {
            if (!open.length) return i;
            if (open.pop() !== c) throw new Error(`unbalanced ${c} at ${i}`);
        } else if (c === ',' && !open.length) {
            return i;
        }
    }
    throw new Error('a value runs to the end of the file');
}

const stripMetaPlugin = {
    name: 'strip-attribute-meta',
    setup(builder) {
        builder.onLoad({ filter: /[\\/]plotly\.js[\\/]src[\\/].*\.js$/ }, (args) => ({
            contents: stripAttributeMeta(readFileSync(args.path, 'utf8')),
            loader: 'js'
        }));
    }
};

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
    plugins: [stripMetaPlugin],
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
