from django.apps import AppConfig


class LiveConfig(AppConfig):
    name = "studio.live"
    label = "live"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from django.db.models.signals import m2m_changed, post_delete, post_save

        from studio.rules.models import CausalGuard, Labeler, Rule, RuleSet, RuleVersion
        from studio.workspaces.models import Workspace

        from .causal_guards import forget_declarations
        from .context import forget_contexts

        # What live monitoring is checked against changed: read it again on the next delivery.
        for model in (Workspace, Rule, RuleVersion, RuleSet, Labeler):
            post_save.connect(forget_contexts, sender=model, dispatch_uid=f"live-{model.__name__}")
            post_delete.connect(forget_contexts, sender=model,
                                dispatch_uid=f"live-del-{model.__name__}")
        m2m_changed.connect(forget_contexts, sender=RuleSet.rules.through,
                            dispatch_uid="live-ruleset-rules")
        # Anticipation searched ahead and off the request path (anticipation).
        from .anticipation import connect

        connect()
        # The causal guards live choice events are decided with (causal_guards).
        post_save.connect(forget_declarations, sender=CausalGuard, dispatch_uid="live-guard")
        post_delete.connect(forget_declarations, sender=CausalGuard,
                            dispatch_uid="live-del-guard")
