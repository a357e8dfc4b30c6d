// sluice report: the interactive charts. Each figure with a live spec
// (its JSON in a script element of class live-data, beside its SVG)
// is redrawn with uPlot, embedded above: hover for the values, drag to
// zoom, double-click to reset, click a legend entry to hide or show its
// series. Without scripts the SVG stays.
(function () {
  "use strict";
  if (typeof uPlot === "undefined") return;
  function sig3(v) {
    var s = Number(v).toPrecision(3);
    return String(parseFloat(s));
  }
  function fmtNs(ns) {
    if (ns == null) return "–";
    var a = Math.abs(ns);
    if (a === 0) return "0";
    if (a < 1e3) return sig3(ns) + " ns";
    if (a < 1e6) return sig3(ns / 1e3) + " µs";
    if (a < 1e9) return sig3(ns / 1e6) + " ms";
    return sig3(ns / 1e9) + " s";
  }
  function fmtCount(v) {
    if (v == null) return "–";
    var a = Math.abs(v);
    if (a >= 1e9) return sig3(v / 1e9) + "G";
    if (a >= 1e6) return sig3(v / 1e6) + "M";
    if (a >= 1e3) return sig3(v / 1e3) + "k";
    return a === Math.trunc(a) ? String(v) : sig3(v);
  }
  function fmtY(spec, v) {
    if (v == null) return "–";
    if (spec.yUnit === "ns") return fmtNs(v);
    if (spec.yUnit === "%") return sig3(v) + "%";
    return fmtCount(v) + spec.yUnit;
  }
  function nines(x) {
    var p = 100 * (1 - Math.pow(10, -x));
    if (p >= 99.99) return (100 - Math.pow(10, 2 - x)).toFixed(Math.ceil(x) - 2) + "%";
    return sig3(p) + "%";
  }
  function fmtX(spec, v) {
    if (v == null) return "–";
    return spec.x === "nines" ? nines(v) : sig3(v) + " s";
  }
  function markersPlugin(spec) {
    return {
      hooks: {
        draw: function (u) {
          var ctx = u.ctx;
          ctx.save();
          ctx.setLineDash([4, 3]);
          ctx.lineWidth = 1;
          // One line per moment; its labels stacked beside it, and each
          // moment's labels a row below the last one's, so none overlap.
          var row = 0, lastX = -1e9;
          var px = window.devicePixelRatio || 1;
          ctx.font = Math.round(11 * px) + "px sans-serif";
          (spec.markers || []).slice().sort(function (a, b) { return a.x - b.x; }).forEach(function (m) {
            var x = Math.round(u.valToPos(m.x, "x", true));
            if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) return;
            ctx.strokeStyle = m.color;
            ctx.beginPath();
            ctx.moveTo(x, u.bbox.top);
            ctx.lineTo(x, u.bbox.top + u.bbox.height);
            ctx.stroke();
            ctx.fillStyle = m.color;
            row = x - lastX < 160 * px ? row + 1 : 0;
            lastX = x;
            ctx.fillText(m.label, x + 3 * px, u.bbox.top + 12 * px * (1 + row % 8));
          });
          ctx.restore();
        }
      }
    };
  }
  function build(fig) {
    var el = fig.querySelector("script.live-data");
    if (!el) return;
    var spec = JSON.parse(el.textContent);
    var box = document.createElement("div");
    box.className = "live-chart";
    fig.insertBefore(box, fig.querySelector(".static"));
    var log = spec.yUnit === "ns";
    var series = [{ label: spec.x === "nines" ? "percentile" : "time", value: function (u, v) { return fmtX(spec, v); } }];
    spec.series.forEach(function (s) {
      var o = {
        label: s.label, stroke: s.color, width: s.dash ? 1.2 : 1.6, spanGaps: false,
        value: function (u, v) { return fmtY(spec, v); }
      };
      if (s.dash) o.dash = [5, 3];
      if (spec.step) o.paths = uPlot.paths.stepped({ align: 1 });
      series.push(o);
    });
    var width = function () { return Math.max(280, Math.min(fig.clientWidth, 1180)); };
    var opts = {
      width: width(), height: width() < 600 ? 240 : 320,
      plugins: [markersPlugin(spec)],
      scales: { x: { time: false }, y: log ? { distr: 3 } : { range: function (u, lo, hi) { return [0, hi > 0 ? hi * 1.05 : 1]; } } },
      axes: [
        {
          label: spec.xLabel,
          splits: spec.x === "nines" ? function (u, i, lo, hi) {
            var out = [];
            // 50% sits close to 0%: only where there is room for both.
            (u.width < 560 ? [0] : [0, Math.log10(2)]).forEach(function (v) { if (v >= lo && v <= hi) out.push(v); });
            for (var n = 1; n <= hi + 1e-9; n++) if (n >= lo) out.push(n);
            if (out.length < 2) out = [lo, hi];
            return out;
          } : undefined,
          values: function (u, vals) { return vals.map(function (v) { return spec.x === "nines" ? nines(v) : sig3(v); }); }
        },
        { label: spec.yLabel, size: 70, values: function (u, vals) { return vals.map(function (v) { return fmtY(spec, v); }); } }
      ],
      series: series,
      cursor: { drag: { x: true, y: false } },
      legend: { live: true }
    };
    var u = new uPlot(opts, spec.data, box);
    fig.classList.add("live");
    window.addEventListener("resize", function () { u.setSize({ width: width(), height: width() < 600 ? 240 : 320 }); });
  }
  function start() {
    var figs = document.querySelectorAll("figure.chart-figure");
    for (var i = 0; i < figs.length; i++) {
      try { build(figs[i]); } catch (e) { /* keep the SVG */ }
    }
    document.documentElement.classList.add("charts-live");
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
