"""The pairs.toml the lock and bisect benchmarks write: one consumer, one provider, one pair."""

from __future__ import annotations

MANIFEST = """\
[components.consumer]
repo = "{consumer}"
package = "{consumer_top}"

[components.provider]
repo = "{provider}"
package = "{package}"

[[checks]]
consumer = "consumer"
provider = "provider"
{gate}consumer-package = "{consumer_package}"

[[pairs]]
name = "bench"
consumer = "{consumer_ref}"
provider = "{provider_ref}"
"""


def pair_manifest(
    consumer: str, provider: str, package: str, consumer_package: str, consumer_ref: str, provider_ref: str, gate: bool
) -> str:
    """One pair of `consumer` (repository, ref, the package checked) and `provider`."""
    return MANIFEST.format(
        consumer=consumer,
        consumer_top=consumer_package.split(".")[0],
        provider=provider,
        package=package,
        consumer_package=consumer_package,
        consumer_ref=consumer_ref,
        provider_ref=provider_ref,
        gate="gate = true\n" if gate else "",
    )
