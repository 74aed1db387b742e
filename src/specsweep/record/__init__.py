"""The records and their files: the results tree, run/launch/window records, atomic writes, locks,
the cache, downloads and models, redaction, timestamps. Every stage imports these; they import no stage."""
