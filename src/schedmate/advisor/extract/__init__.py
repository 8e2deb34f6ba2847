"""Static extraction of workload metadata from a job's code: launchers and shell (`launch`,
`shell`), configs (`configs`, `pyconfig`, `inherit`), Python AST facts (`pyscan`), and the
rules that turn them into `WorkloadMetadata` (`derive`, `vocab`, `budget`); `paths` is the one
place strings become paths; `extractor` ties them together."""

from schedmate.advisor.extract.extractor import (
    Extraction,
    StaticExtractor,
    directory_digest,
    guess_entrypoint,
    tree_signature,
)

__all__ = ["Extraction", "StaticExtractor", "directory_digest", "guess_entrypoint", "tree_signature"]
