"""AppGroup API routes, mounted under "api/". Every route answers with and without a trailing
slash (APPEND_SLASH is off: clients are never redirected)."""

from rest_framework.routers import DefaultRouter

from .views import AppGroupViewSet, PlacementViewSet

router = DefaultRouter()
router.trailing_slash = "/?"  # regex: the slash is optional (DRF only takes a bool in __init__)
router.include_root_view = False
router.register("appgroups", AppGroupViewSet, basename="appgroup")
router.register("appgroup-placements", PlacementViewSet, basename="appgroup-placement")

urlpatterns = router.urls
