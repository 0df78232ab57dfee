from rest_framework.routers import SimpleRouter

from . import views

router = SimpleRouter(trailing_slash="/?")
router.register("probes/samples", views.PairSampleViewSet, basename="probes-pairsample")
router.register("probes/node-samples", views.NodeSampleViewSet, basename="probes-nodesample")
router.register("probes/watermarks", views.PullWatermarkViewSet, basename="probes-watermark")

urlpatterns = router.urls
