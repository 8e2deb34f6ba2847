"""Static extraction of workload metadata from a job's code: launchers and shell (`launch`,
`shell`), configs (`configs`, `pyconfig`, `inherit`), Python AST facts (`pyscan`), and the
rules that turn them into `WorkloadMetadata` (`derive`, `vocab`, `budget`); `extractor` ties
them together."""

from schedmate.advisor.extract.extractor import (
    Extraction,
    StaticExtractor,
    directory_digest,
    guess_entrypoint,
)

__all__ = ["Extraction", "StaticExtractor", "directory_digest", "guess_entrypoint"]
