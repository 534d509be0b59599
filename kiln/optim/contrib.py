"""kiln.optim.contrib: optax.contrib's optimizers."""
from kiln.frontend.optim.contrib import COCOBState as COCOBState
from kiln.frontend.optim.contrib import DAdaptAdamWState as DAdaptAdamWState
from kiln.frontend.optim.contrib import DifferentiallyPrivateAggregateState as DifferentiallyPrivateAggregateState
from kiln.frontend.optim.contrib import DoGState as DoGState
from kiln.frontend.optim.contrib import DoWGState as DoWGState
from kiln.frontend.optim.contrib import GaLoreDimensionNumbers as GaLoreDimensionNumbers
from kiln.frontend.optim.contrib import GaLoreState as GaLoreState
from kiln.frontend.optim.contrib import HutchinsonState as HutchinsonState
from kiln.frontend.optim.contrib import MadgradState as MadgradState
from kiln.frontend.optim.contrib import MechanicState as MechanicState
from kiln.frontend.optim.contrib import MomoAdamState as MomoAdamState
from kiln.frontend.optim.contrib import MomoState as MomoState
from kiln.frontend.optim.contrib import MuonDimensionNumbers as MuonDimensionNumbers
from kiln.frontend.optim.contrib import MuonState as MuonState
from kiln.frontend.optim.contrib import NormalizeState as NormalizeState
from kiln.frontend.optim.contrib import ProdigyState as ProdigyState
from kiln.frontend.optim.contrib import ReduceLROnPlateauState as ReduceLROnPlateauState
from kiln.frontend.optim.contrib import SAMState as SAMState
from kiln.frontend.optim.contrib import ScaleByAdemamixState as ScaleByAdemamixState
from kiln.frontend.optim.contrib import ScaleBySimplifiedAdEMAMixState as ScaleBySimplifiedAdEMAMixState
from kiln.frontend.optim.contrib import ScheduleFreeState as ScheduleFreeState
from kiln.frontend.optim.contrib import SophiaState as SophiaState
from kiln.frontend.optim.contrib import SplitRealAndImaginaryState as SplitRealAndImaginaryState
from kiln.frontend.optim.contrib import acprop as acprop
from kiln.frontend.optim.contrib import ademamix as ademamix
from kiln.frontend.optim.contrib import adopt as adopt
from kiln.frontend.optim.contrib import cocob as cocob
from kiln.frontend.optim.contrib import dadapt_adamw as dadapt_adamw
from kiln.frontend.optim.contrib import differentially_private_aggregate as differentially_private_aggregate
from kiln.frontend.optim.contrib import dog as dog
from kiln.frontend.optim.contrib import dowg as dowg
from kiln.frontend.optim.contrib import dpsgd as dpsgd
from kiln.frontend.optim.contrib import galore as galore
from kiln.frontend.optim.contrib import hutchinson_estimator_diag_hessian as hutchinson_estimator_diag_hessian
from kiln.frontend.optim.contrib import madgrad as madgrad
from kiln.frontend.optim.contrib import mechanize as mechanize
from kiln.frontend.optim.contrib import momo as momo
from kiln.frontend.optim.contrib import momo_adam as momo_adam
from kiln.frontend.optim.contrib import muon as muon
from kiln.frontend.optim.contrib import normalize as normalize
from kiln.frontend.optim.contrib import prodigy as prodigy
from kiln.frontend.optim.contrib import reduce_on_plateau as reduce_on_plateau
from kiln.frontend.optim.contrib import sam as sam
from kiln.frontend.optim.contrib import scale_by_acprop as scale_by_acprop
from kiln.frontend.optim.contrib import scale_by_ademamix as scale_by_ademamix
from kiln.frontend.optim.contrib import scale_by_adopt as scale_by_adopt
from kiln.frontend.optim.contrib import scale_by_cocob as scale_by_cocob
from kiln.frontend.optim.contrib import scale_by_galore as scale_by_galore
from kiln.frontend.optim.contrib import scale_by_madgrad as scale_by_madgrad
from kiln.frontend.optim.contrib import scale_by_muon as scale_by_muon
from kiln.frontend.optim.contrib import scale_by_simplified_ademamix as scale_by_simplified_ademamix
from kiln.frontend.optim.contrib import schedule_free as schedule_free
from kiln.frontend.optim.contrib import schedule_free_adamw as schedule_free_adamw
from kiln.frontend.optim.contrib import schedule_free_eval_params as schedule_free_eval_params
from kiln.frontend.optim.contrib import schedule_free_sgd as schedule_free_sgd
from kiln.frontend.optim.contrib import simplified_ademamix as simplified_ademamix
from kiln.frontend.optim.contrib import sophia as sophia
from kiln.frontend.optim.contrib import split_real_and_imaginary as split_real_and_imaginary

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
