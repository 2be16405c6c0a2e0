"""Structure checks: the WeightSyncer interface the prompt states (names, parameters, defaults,
properties). What `buckets` holds and in which order is judged in probe_state / probe_traffic."""
import functools
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
    with check("api-constructor", "structure", requirements=["import-path", "ctor-signature"]) as c:
        wsync, cls = _syncer()
        c.location = locate(cls)
        require_signature(wsync, "WeightSyncer", ["model", "bucket_bytes", "src"])
        # The prompt states int defaults; `type(...) is int` also keeps False or 67108864.0 from passing
        # as equal.
        src_default = _default(cls, "src")
        if type(src_default) is not int or src_default != 0:
            c.fail("WeightSyncer(model, bucket_bytes, src): src must default to 0 (the trainer rank), got %r"
                   % (src_default,))
        bucket_default = _default(cls, "bucket_bytes")
        if type(bucket_default) is not int or bucket_default != 64 * 2**20:
            c.fail("WeightSyncer(model, bucket_bytes, src): bucket_bytes defaults to 64 * 2**20 (64 MiB), got %r"
                   % (bucket_default,))

    with check("api-sync", "structure", requirements=["sync-signature"]) as c:
        if cls is None:
            _, cls = _syncer()
        c.location = locate(cls)
        sync = require_signature(cls, "sync", ["version"])
        c.location = locate(sync) or c.location
        if _default(sync, "version") is not None:
            c.fail("WeightSyncer.sync(version): rollout ranks call sync() without a version, so version "
                   "must default to None")

    with check("api-properties", "structure", requirements=["version-property", "buckets-names"]) as c:
        if cls is None:
            _, cls = _syncer()
        c.location = locate(cls)
        for name in ("version", "buckets"):
            attr = inspect.getattr_static(cls, name, None)
            # The prompt states properties; a cached_property reads the same way (buckets is fixed).
            if attr is None:
                # Reads the same, but callers can rebind or mutate it: buckets is fixed at construction,
                # version is what the syncer last transferred.
                c.fail("WeightSyncer.%s must be a read-only property, found no class attribute (a plain "
                       "instance attribute set in __init__ or sync can be reassigned or mutated by callers)"
                       % name)
            elif not isinstance(attr, (property, functools.cached_property)):
                c.fail("WeightSyncer.%s must be a property (read as syncer.%s, not called), found %s"
                       % (name, name, type(attr).__name__))


if __name__ == "__main__":
    main()
