"""optax.contrib's optimizers (as optax 0.2.8's), one module per family."""
from ._acprop import acprop as acprop
from ._acprop import scale_by_acprop as scale_by_acprop
from ._ademamix import ScaleByAdemamixState as ScaleByAdemamixState
from ._ademamix import ScaleBySimplifiedAdEMAMixState as ScaleBySimplifiedAdEMAMixState
from ._ademamix import ademamix as ademamix
from ._ademamix import scale_by_ademamix as scale_by_ademamix
from ._ademamix import scale_by_simplified_ademamix as scale_by_simplified_ademamix
from ._ademamix import simplified_ademamix as simplified_ademamix
from ._adopt import adopt as adopt
from ._adopt import scale_by_adopt as scale_by_adopt
from ._cocob import COCOBState as COCOBState
from ._cocob import cocob as cocob
from ._cocob import scale_by_cocob as scale_by_cocob
from ._complex_valued import SplitRealAndImaginaryState as SplitRealAndImaginaryState
from ._complex_valued import split_real_and_imaginary as split_real_and_imaginary
from ._dadapt_adamw import DAdaptAdamWState as DAdaptAdamWState
from ._dadapt_adamw import dadapt_adamw as dadapt_adamw
from ._dog import DoGState as DoGState
from ._dog import DoWGState as DoWGState
from ._dog import dog as dog
from ._dog import dowg as dowg
from ._galore import GaLoreDimensionNumbers as GaLoreDimensionNumbers
from ._galore import GaLoreState as GaLoreState
from ._galore import galore as galore
from ._galore import scale_by_galore as scale_by_galore
from ._madgrad import MadgradState as MadgradState
from ._madgrad import madgrad as madgrad
from ._madgrad import scale_by_madgrad as scale_by_madgrad
from ._mechanic import MechanicState as MechanicState
from ._mechanic import mechanize as mechanize
from ._momo import MomoAdamState as MomoAdamState
from ._momo import MomoState as MomoState
from ._momo import momo as momo
from ._momo import momo_adam as momo_adam
from ._muon import MuonDimensionNumbers as MuonDimensionNumbers
from ._muon import MuonState as MuonState
from ._muon import muon as muon
from ._muon import scale_by_muon as scale_by_muon
from ._normalize import NormalizeState as NormalizeState
from ._normalize import normalize as normalize
from ._privacy import DifferentiallyPrivateAggregateState as DifferentiallyPrivateAggregateState
from ._privacy import differentially_private_aggregate as differentially_private_aggregate
from ._privacy import dpsgd as dpsgd
from ._prodigy import ProdigyState as ProdigyState
from ._prodigy import prodigy as prodigy
from ._reduce_on_plateau import ReduceLROnPlateauState as ReduceLROnPlateauState
from ._reduce_on_plateau import reduce_on_plateau as reduce_on_plateau
from ._sam import SAMState as SAMState
from ._sam import sam as sam
from ._schedule_free import ScheduleFreeState as ScheduleFreeState
from ._schedule_free import schedule_free as schedule_free
from ._schedule_free import schedule_free_adamw as schedule_free_adamw
from ._schedule_free import schedule_free_eval_params as schedule_free_eval_params
from ._schedule_free import schedule_free_sgd as schedule_free_sgd
from ._sophia import HutchinsonState as HutchinsonState
from ._sophia import SophiaState as SophiaState
from ._sophia import hutchinson_estimator_diag_hessian as hutchinson_estimator_diag_hessian
from ._sophia import sophia as sophia

__all__ = [
    "COCOBState", "DAdaptAdamWState", "DifferentiallyPrivateAggregateState", "DoGState", "DoWGState",
    "GaLoreDimensionNumbers", "GaLoreState", "HutchinsonState", "MadgradState", "MechanicState", "MomoAdamState",
    "MomoState", "MuonDimensionNumbers", "MuonState", "NormalizeState", "ProdigyState", "ReduceLROnPlateauState",
    "SAMState", "ScaleByAdemamixState", "ScaleBySimplifiedAdEMAMixState", "ScheduleFreeState", "SophiaState",
    "SplitRealAndImaginaryState", "acprop", "ademamix", "adopt", "cocob", "dadapt_adamw",
    "differentially_private_aggregate", "dog", "dowg", "dpsgd", "galore", "hutchinson_estimator_diag_hessian",
    "madgrad", "mechanize", "momo", "momo_adam", "muon", "normalize", "prodigy", "reduce_on_plateau", "sam",
    "scale_by_acprop", "scale_by_ademamix", "scale_by_adopt", "scale_by_cocob", "scale_by_galore",
    "scale_by_madgrad", "scale_by_muon", "scale_by_simplified_ademamix", "schedule_free", "schedule_free_adamw",
    "schedule_free_eval_params", "schedule_free_sgd", "simplified_ademamix", "sophia", "split_real_and_imaginary",
]
