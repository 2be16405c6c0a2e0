/**
 * The scorecard page's own script (plain ES5, inlined after Chart.js): draws the charts from the
 * page's JSON data block and opens an agent's drill-down from the ranking. It reads only that data
 * block and makes no request; the charts are labelled with counts so a reader never sees a bare
 * percentage for fewer than 5 evaluations (those agents are listed under the chart instead).
 */
export const PAGE_SCRIPT = `
(function () {
  function openDrill(id) {
    var d = document.getElementById(id);
    if (!d) return;
    d.open = true;
    d.scrollIntoView({ block: "start" });
  }
  document.addEventListener("click", function (e) {
    var a = e.target && e.target.closest ? e.target.closest("a.drill-link") : null;
    if (!a) return;
    e.preventDefault();
    openDrill(a.getAttribute("href").slice(1));
  });
  if (location.hash && location.hash.indexOf("#drill-") === 0) openDrill(location.hash.slice(1));
  if (typeof Chart === "undefined") return;
  var d = JSON.parse(document.getElementById("scorecard-data").textContent);
  var pctAxis = { min: 0, max: 100, ticks: { callback: function (v) { return v + "%"; } } };
  function intervalChart(id, s, colour) {
    var el = document.getElementById(id);
    if (!el || !s.labels.length) return;
    new Chart(el, {
      type: "bar",
      data: { labels: s.labels, datasets: [
        { type: "bar", label: "95% interval", data: s.ranges, backgroundColor: colour + "55", borderColor: colour, borderWidth: 1, barPercentage: 0.6 },
        { type: "line", label: "rate", data: s.points, showLine: false, pointRadius: 5, pointStyle: "rectRot", backgroundColor: colour, borderColor: colour }
      ] },
      options: { indexAxis: "y", maintainAspectRatio: false, animation: false, scales: { x: pctAxis },
        plugins: { legend: { display: false }, tooltip: { callbacks: { label: function (c) {
          var n = s.counts[c.dataIndex];
          return s.points[c.dataIndex] + "% (" + n[0] + "/" + n[1] + "), 95% CI " + s.ranges[c.dataIndex][0] + "–" + s.ranges[c.dataIndex][1] + "%"; } } } } }
    });
  }
  intervalChart("ranking", d.ranking, "#0969da");
  intervalChart("probe-rejection", d.probeRejection, "#d4a72c");
  var stacked = { x: { stacked: true, ticks: { precision: 0 } }, y: { stacked: true } };
  if (document.getElementById("categories")) new Chart(document.getElementById("categories"), {
    type: "bar", data: d.categories,
    options: { indexAxis: "y", maintainAspectRatio: false, animation: false, scales: stacked }
  });
  if (document.getElementById("trend-resolved")) new Chart(document.getElementById("trend-resolved"), {
    type: "line", data: { labels: d.weekly.labels, datasets: d.weekly.resolved },
    options: { maintainAspectRatio: false, animation: false, spanGaps: false, scales: { y: pctAxis } }
  });
  if (document.getElementById("trend-evaluations")) new Chart(document.getElementById("trend-evaluations"), {
    type: "bar", data: { labels: d.weekly.labels, datasets: d.weekly.evaluations },
    options: { maintainAspectRatio: false, animation: false, scales: { x: { stacked: true }, y: { stacked: true, ticks: { precision: 0 } } } }
  });
})();
`;
