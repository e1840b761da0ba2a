from tests.api.world import world  # noqa: F401
