import os

from hypothesis import HealthCheck, settings

# "ci" (the default) replays the same examples on every run; "dev" explores new ones, as many as
# HYPOTHESIS_EXAMPLES says (default 2000). Pick with HYPOTHESIS_PROFILE=dev.
settings.register_profile(
    "ci",
    max_examples=150,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=int(os.environ.get("HYPOTHESIS_EXAMPLES", "2000")), deadline=None,
                          print_blob=True, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
