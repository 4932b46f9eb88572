// plotly.js for embedlab's projector page: the core (which always holds the `scatter` trace, drawn in SVG:
// the 2-D page's selection overlay, and every 2-D trace in a browser without WebGL) with the two WebGL
// traces the page draws, `scattergl` (2-D points and search rings) and `scatter3d` (--dims 3).
// The same registration as plotly.js's own custom bundle task (CUSTOM_BUNDLE.md:
// `npm run custom-bundle -- --traces scatter,scattergl,scatter3d`).
var Plotly = require('plotly.js/lib/core');

Plotly.register([
    require('plotly.js/lib/scattergl'),
    require('plotly.js/lib/scatter3d')
]);

module.exports = Plotly;
