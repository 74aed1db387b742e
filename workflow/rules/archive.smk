rule archive_pack:
    input:
        unpack(archive_inputs),
    output:
        ARCHIVE,
    log:
        "logs/archive/pack.log",
    conda:
        "../../envs/specsweep.yaml"
    params:
        config=redacted_config,
        source=workflow.basedir,
        name=ARCHIVE_NAME,
    script:
        "../../scripts/pack_archive.py"


# The archive's own rebuild command in an empty folder: no archive is called verified before it succeeds.
rule archive_rebuild:
    input:
        ARCHIVE,
    output:
        results_tree.archive_rebuilt(ARCHIVE_NAME),
    log:
        "logs/archive/rebuild-empty.log",
    conda:
        "../../envs/specsweep.yaml"
    script:
        "../../scripts/rebuild_archive.py"


# `snakemake --cores 1 archive`: pack, rebuild it in an empty folder, then check every member against the manifest.
rule archive:
    input:
        ARCHIVE,
        rebuilt=results_tree.archive_rebuilt(ARCHIVE_NAME),
    output:
        results_tree.archive_verified(ARCHIVE_NAME),
    log:
        "logs/archive/verify.log",
    conda:
        "../../envs/specsweep.yaml"
    script:
        "../../scripts/verify_archive.py"


# In an unpacked archive only (see its README.md): rebuilt aggregates vs the manifest.
rule rebuild:
    input:
        REBUILT,
        manifest="MANIFEST.sha256",
    output:
        results_tree.REBUILD_CHECK,
    log:
        "logs/archive/rebuild.log",
    conda:
        "../../envs/specsweep.yaml"
    params:
        not_checked=NOT_REBUILT,
    script:
        "../../scripts/check_rebuild.py"
