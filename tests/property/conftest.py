import os

from hypothesis import HealthCheck, settings

# "ci" (the default) replays the same examples on every run; "dev" explores new ones.
# Pick with HYPOTHESIS_PROFILE=dev.
settings.register_profile(
    "ci",
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", print_blob=True, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
