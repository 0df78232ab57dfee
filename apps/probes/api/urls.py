from rest_framework.routers import SimpleRouter

from . import views

router = SimpleRouter(trailing_slash="/?")  # type: ignore[arg-type]  # a regex, as DRF documents; the stubs say bool
router.register("probes/samples", views.PairSampleViewSet, basename="probes-pairsample")
router.register("probes/node-samples", views.NodeSampleViewSet, basename="probes-nodesample")
router.register("probes/watermarks", views.PullWatermarkViewSet, basename="probes-watermark")

urlpatterns = router.urls
