export const id = 731;
export const ids = [731];
export const modules = {

/***/ 5731:
/***/ ((__unused_webpack_module, __webpack_exports__, __webpack_require__) => {

/* harmony export */ __webpack_require__.d(__webpack_exports__, {
/* harmony export */   storeBackupCommand: () => (/* binding */ storeBackupCommand)
/* harmony export */ });
/* unused harmony export backupStore */
/* harmony import */ var node_fs__WEBPACK_IMPORTED_MODULE_0__ = __webpack_require__(3024);
/* harmony import */ var node_fs__WEBPACK_IMPORTED_MODULE_0___default = /*#__PURE__*/__webpack_require__.n(node_fs__WEBPACK_IMPORTED_MODULE_0__);
/* harmony import */ var node_path__WEBPACK_IMPORTED_MODULE_1__ = __webpack_require__(6760);
/* harmony import */ var node_path__WEBPACK_IMPORTED_MODULE_1___default = /*#__PURE__*/__webpack_require__.n(node_path__WEBPACK_IMPORTED_MODULE_1__);
/* harmony import */ var better_sqlite3__WEBPACK_IMPORTED_MODULE_2__ = __webpack_require__(4918);
/* harmony import */ var better_sqlite3__WEBPACK_IMPORTED_MODULE_2___default = /*#__PURE__*/__webpack_require__.n(better_sqlite3__WEBPACK_IMPORTED_MODULE_2__);
/* harmony import */ var _engine_errors_js__WEBPACK_IMPORTED_MODULE_3__ = __webpack_require__(7679);
/* harmony import */ var _store_db_js__WEBPACK_IMPORTED_MODULE_4__ = __webpack_require__(664);





/** Pages per backup step: all of them, so the copy is one consistent read of the store (see below). */
const ALL_PAGES = 0x7fffffff;
/**
 * Copies the live store at `source` to `dest` with SQLite's online backup API (better-sqlite3's
 * `db.backup()`), while the app keeps writing. The copy is taken in one step, inside one read
 * transaction: in WAL mode (the store's) that blocks no writer, and it is a consistent snapshot —
 * a backup in small steps restarts whenever another process writes, and under a busy app might
 * never end. Written to `<dest>.partial` and renamed when checked (`PRAGMA integrity_check`), so
 * `dest` is never a half copy. Refuses a missing source or an existing `dest`.
 */
async function backupStore(source, dest) {
    const src = (0,node_path__WEBPACK_IMPORTED_MODULE_1__.resolve)(source);
    const out = (0,node_path__WEBPACK_IMPORTED_MODULE_1__.resolve)(dest);
    if (!(0,node_fs__WEBPACK_IMPORTED_MODULE_0__.existsSync)(src))
        throw new _engine_errors_js__WEBPACK_IMPORTED_MODULE_3__/* .InputError */ .d(`store backup: the store ${src} does not exist; name the app's store file with --db or $PROBEGATE_DB.`, { field: "--db" });
    if ((0,node_fs__WEBPACK_IMPORTED_MODULE_0__.existsSync)(out))
        throw new _engine_errors_js__WEBPACK_IMPORTED_MODULE_3__/* .InputError */ .d(`store backup: ${out} already exists; name a new file (backups are never written over).`, { field: "dest" });
    if (!(0,node_fs__WEBPACK_IMPORTED_MODULE_0__.existsSync)((0,node_path__WEBPACK_IMPORTED_MODULE_1__.dirname)(out)))
        throw new _engine_errors_js__WEBPACK_IMPORTED_MODULE_3__/* .InputError */ .d(`store backup: the folder ${(0,node_path__WEBPACK_IMPORTED_MODULE_1__.dirname)(out)} does not exist; create it first.`, { field: "dest" });
    const partial = `${out}.partial`;
    (0,node_fs__WEBPACK_IMPORTED_MODULE_0__.rmSync)(partial, { force: true });
    const t0 = performance.now();
    // Not openStore: a backup must not migrate the live store (a newer app may own its schema).
    const db = new (better_sqlite3__WEBPACK_IMPORTED_MODULE_2___default())(src, { fileMustExist: true });
    try {
        db.pragma("busy_timeout = 10000");
        await db.backup(partial, { progress: () => ALL_PAGES });
    }
    catch (e) {
        (0,node_fs__WEBPACK_IMPORTED_MODULE_0__.rmSync)(partial, { force: true });
        throw new Error(`store backup of ${src} failed: ${e.message}`);
    }
    finally {
        db.close();
    }
    const copy = new (better_sqlite3__WEBPACK_IMPORTED_MODULE_2___default())(partial, { fileMustExist: true });
    let report;
    try {
        const integrity = copy.pragma("integrity_check", { simple: true });
        if (integrity !== "ok")
            throw new Error(`the copy ${partial} fails SQLite's integrity check (${String(integrity)}); it was kept for inspection, ${out} was not written`);
        const hasEvaluations = copy.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'evaluations'").get();
        const evaluations = hasEvaluations ? copy.prepare("SELECT COUNT(*) AS n FROM evaluations").get().n : 0;
        // The copy carries the store's WAL mode; fold it into one file so `dest` stands alone.
        copy.pragma("wal_checkpoint(TRUNCATE)");
        report = { source: src, dest: out, schemaVersion: (0,_store_db_js__WEBPACK_IMPORTED_MODULE_4__/* .schemaVersion */ .CZ)(copy), evaluations };
    }
    finally {
        copy.close();
    }
    (0,node_fs__WEBPACK_IMPORTED_MODULE_0__.renameSync)(partial, out);
    for (const side of ["-wal", "-shm"])
        (0,node_fs__WEBPACK_IMPORTED_MODULE_0__.rmSync)(`${partial}${side}`, { force: true });
    return { ...report, bytes: (0,node_fs__WEBPACK_IMPORTED_MODULE_0__.statSync)(out).size, seconds: (performance.now() - t0) / 1000 };
}
/** `probegate store backup <dest> [--db file]`: prints what was copied; exit 0, or 2 on bad input. */
async function storeBackupCommand(dest, flags, io) {
    const source = flags.db ?? process.env.PROBEGATE_DB ?? "probegate.sqlite";
    const r = await backupStore(source, dest);
    io.stdout(`backed up ${r.source} to ${r.dest}: ${(r.bytes / 1024 / 1024).toFixed(1)} MiB, schema version ${r.schemaVersion}, ${r.evaluations} evaluation(s), integrity ok, ${r.seconds.toFixed(2)} s\n` +
        `restore: stop the app, move ${r.dest} to the store's path (delete that path's -wal and -shm files first), start the app\n`);
    return 0;
}


/***/ })

};
