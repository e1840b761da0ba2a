from django.apps import AppConfig


class GuardConfig(AppConfig):
    """The guard over live sessions (issue 16): policies per rule set, learned risk models and
    the decisions answered to agents.  The risk and decision logic is ``studio.risk``."""

    name = "studio.guard"
    label = "guard"
    default_auto_field = "django.db.models.BigAutoField"
