export const id = 103;
export const ids = [103];
export const modules = {

/***/ 103:
/***/ ((__unused_webpack_module, __webpack_exports__, __webpack_require__) => {

__webpack_require__.r(__webpack_exports__);
/* harmony export */ __webpack_require__.d(__webpack_exports__, {
/* harmony export */   openPowerStore: () => (/* binding */ openPowerStore),
/* harmony export */   quarantinedNow: () => (/* binding */ quarantinedNow),
/* harmony export */   recordRun: () => (/* binding */ recordRun)
/* harmony export */ });
/* harmony import */ var node_path__WEBPACK_IMPORTED_MODULE_0__ = __webpack_require__(6760);
/* harmony import */ var node_path__WEBPACK_IMPORTED_MODULE_0___default = /*#__PURE__*/__webpack_require__.n(node_path__WEBPACK_IMPORTED_MODULE_0__);
/* harmony import */ var _store_db_js__WEBPACK_IMPORTED_MODULE_1__ = __webpack_require__(9174);
/* harmony import */ var _store_probe_health_js__WEBPACK_IMPORTED_MODULE_2__ = __webpack_require__(8042);



/** Opens (creating if needed) the store that keeps known-good outcomes: usually the app's own. */
function openPowerStore(file) {
    return (0,_store_db_js__WEBPACK_IMPORTED_MODULE_1__/* .openStore */ .Ch)((0,node_path__WEBPACK_IMPORTED_MODULE_0__.resolve)(file));
}
/** Records one run of a correct example as known-good outcomes of every check it ran. */
function recordRun(db, r) {
    const submission = `${(0,node_path__WEBPACK_IMPORTED_MODULE_0__.basename)(r.example.patch)}${r.runs > 1 ? ` run ${r.run + 1}/${r.runs}` : ""}`;
    (0,_store_probe_health_js__WEBPACK_IMPORTED_MODULE_2__/* .recordKnownGoodOutcomes */ .t7)(db, { task: r.task.spec.id, probeSet: r.result.task.probeSet, submission, source: "validate --power", at: new Date() }, r.result.probes);
}
/** The task's checks quarantined now for this probe set. */
function quarantinedNow(db, task, probeSet) {
    return (0,_store_probe_health_js__WEBPACK_IMPORTED_MODULE_2__/* .quarantinedChecksOf */ .Tm)(db, { task, probeSet });
}


/***/ })

};
