"""Structure checks: the WeightSyncer interface the prompt states."""
import inspect

from probegate_probe import ProbeFailure, check, locate, require_signature


def _syncer():
    try:
        import wsync
    except Exception as exc:
        raise ProbeFailure("importing the package wsync failed: %s: %s" % (type(exc).__name__, exc))
    cls = getattr(wsync, "WeightSyncer", None)
    if cls is None:
        raise ProbeFailure("wsync does not export WeightSyncer (expected `from wsync import WeightSyncer`)",
                           location=locate(wsync))
    if not inspect.isclass(cls):
        raise ProbeFailure("wsync.WeightSyncer is a %s, expected a class" % type(cls).__name__, location=locate(cls))
    return wsync, cls


def _default(fn, name):
    try:
        return inspect.signature(fn).parameters[name].default
    except (KeyError, TypeError, ValueError):
        return inspect.Parameter.empty


def main():
    cls = None
    with check("api-constructor", "structure") as c:
        wsync, cls = _syncer()
        c.location = locate(cls)
        require_signature(wsync, "WeightSyncer", ["model", "bucket_bytes", "src"])
        if _default(cls, "src") != 0:
            c.fail("WeightSyncer(model, bucket_bytes, src): src must default to 0 (the trainer rank), got %r"
                   % _default(cls, "src"))
        bucket_default = _default(cls, "bucket_bytes")
        if not isinstance(bucket_default, int) or bucket_default <= 0:
            c.fail("WeightSyncer(model, bucket_bytes, src): bucket_bytes needs a positive int default, got %r"
                   % bucket_default)

    with check("api-sync", "structure") as c:
        if cls is None:
            _, cls = _syncer()
        c.location = locate(cls)
        sync = require_signature(cls, "sync", ["version"])
        c.location = locate(sync) or c.location
        if _default(sync, "version") is not None:
            c.fail("WeightSyncer.sync(version): rollout ranks call sync() without a version, so version "
                   "must default to None")

    with check("api-properties", "structure") as c:
        if cls is None:
            _, cls = _syncer()
        c.location = locate(cls)
        for name in ("version", "buckets"):
            attr = inspect.getattr_static(cls, name, None)
            if not isinstance(attr, property):
                c.fail("WeightSyncer.%s must be a read-only property, found %s"
                       % (name, "nothing" if attr is None else type(attr).__name__))
            if attr.fset is not None:
                c.location = locate(attr) or c.location
                c.fail("WeightSyncer.%s must be read-only: only sync() changes what a rank holds" % name)


if __name__ == "__main__":
    main()
