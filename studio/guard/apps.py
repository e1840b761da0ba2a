from django.apps import AppConfig


class GuardConfig(AppConfig):
    """The guard over live sessions (issue 16): policies per rule set, learned risk models and
    the decisions answered to agents.  The risk and decision logic is ``studio.risk``."""

    name = "studio.guard"
    label = "guard"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from django.db.models.signals import m2m_changed, post_delete, post_save

        from studio.rules.models import RuleSet

        from .models import GuardPolicy
        from .services import forget_policies

        for model in (GuardPolicy, RuleSet):
            post_save.connect(forget_policies, sender=model, dispatch_uid=f"guard-{model.__name__}")
            post_delete.connect(forget_policies, sender=model,
                                dispatch_uid=f"guard-del-{model.__name__}")
        m2m_changed.connect(forget_policies, sender=RuleSet.rules.through,
                            dispatch_uid="guard-ruleset-rules")
        # Risk models are learned again when the live rules change (learning.connect_relearning).
        from .learning import connect_relearning

        connect_relearning()
